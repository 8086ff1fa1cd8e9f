// Faults from outside the process: the model file truncated or overwritten on disk while tern serve runs (it keeps
// answering from what it loaded: the model unmaps its file after load, so no read can die with SIGBUS), a KV budget
// larger than memory (one line naming the largest that fits), a write that fails for space (ulimit -f stands in for
// a full disk) and SIGTERM in the middle of a write: neither leaves a file under the output name or beside it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "serve_process.h"

namespace tern {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

fs::path fresh_dir(const std::string& name) {
    const fs::path dir = fs::path(TERN_TEST_TMP) / ("faults_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

std::string greedy_completion(int port) {
    const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 12}, {"temperature", 0}};
    const testing::HttpReply reply = testing::http_post(port, "/v1/completions", body.dump());
    if (reply.status != 200) return "HTTP " + std::to_string(reply.status) + " " + reply.error + " " + reply.body;
    return json::parse(reply.body)["choices"][0]["text"].get<std::string>();
}

// Before the model copied its weights out of the file, the first request after the truncation died with SIGBUS
// (the token embedding of the q8_0 model was read from the mapping).
TEST(ServeFaults, ModelFileTruncatedOrOverwrittenWhileServingKeepsAnswering) {
    const fs::path dir = fresh_dir("truncated");
    const fs::path model = dir / "model.gguf";
    fs::copy_file(testing::tiny_model_path(), model);
    testing::ServeProcess server;
    ASSERT_EQ(server.start({"-m", model.string()}), "");
    const std::string before = greedy_completion(server.port());

    fs::resize_file(model, 0);  // in place: the same inode, now empty
    EXPECT_EQ(greedy_completion(server.port()), before) << server.log();
    {
        std::ofstream overwrite(model, std::ios::binary);  // the same inode again, garbage of another length
        overwrite << std::string(1 << 16, '\x5a');
    }
    EXPECT_EQ(greedy_completion(server.port()), before) << server.log();
    EXPECT_EQ(testing::http_get(server.port(), "/health").status, 200);
    EXPECT_EQ(server.stop(), 0) << server.log();
    fs::remove_all(dir);
}

TEST(ServeFaults, KvBudgetLargerThanMemoryExitsWithTheLargestThatFits) {
    testing::ServeProcess server;
    server.launch({"-m", testing::tiny_model_path(), "--kv-cache-mem", "100000"});  // GiB
    EXPECT_EQ(server.wait(30s), 1) << server.log();
    const std::string log = server.log();
    EXPECT_NE(log.find("tern: error: --kv-cache-mem 100000.00 GiB does not fit"), std::string::npos) << log;
    EXPECT_NE(log.find("the largest KV cache budget that fits is --kv-cache-mem "), std::string::npos) << log;
}

// Names in `dir` other than `keep`: what a failed or interrupted write left behind.
std::vector<std::string> leftovers(const fs::path& dir, const std::string& keep = "") {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) {
        if (entry.path().filename() != keep) names.push_back(entry.path().filename().string());
    }
    return names;
}

int wait_for_exit(pid_t pid, int* signal_number) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    *signal_number = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(WriteFaults, AWriteThatRunsOutOfSpaceLeavesNothingBehind) {
    const fs::path dir = fresh_dir("out-of-space");
    const std::string log = (dir / "log").string();
    // 2048 blocks of 512 bytes (dash's unit) or of 1 KiB (bash's): far below the model's 36 MB either way.
    const std::string command = std::string("ulimit -f 2048; exec ") + TERN_BINARY +
                                " synth --preset small --type q8_0 -o " + (dir / "model.gguf").string();
    int signal_number = 0;
    const int exit_code = wait_for_exit(testing::spawn_with_log({"/bin/sh", "-c", command}, log), &signal_number);
    std::ifstream log_stream(log);
    const std::string text((std::istreambuf_iterator<char>(log_stream)), std::istreambuf_iterator<char>());
    EXPECT_EQ(exit_code, 1) << "signal " << signal_number << ": " << text;
    EXPECT_NE(text.find("write failed: File too large"), std::string::npos) << text;
    EXPECT_EQ(leftovers(dir, "log"), std::vector<std::string>{});
    fs::remove_all(dir);
}

TEST(WriteFaults, SigtermDuringAWriteLeavesNothingBehind) {
    const fs::path dir = fresh_dir("sigterm");
    // TinyLlama's shape in q8_0: 1.1 GB, seconds of writing, so that the signal lands mid-write.
    const pid_t pid = testing::spawn_with_log(
        {TERN_BINARY, "synth", "--preset", "tinyllama-1.1b", "--type", "q8_0", "-o", (dir / "model.gguf").string()},
        (dir / "log").string());
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (leftovers(dir, "log").empty() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(2ms);
    ASSERT_EQ(leftovers(dir, "log").size(), 1u) << "the writer's temporary file never appeared";
    EXPECT_NE(leftovers(dir, "log")[0].find("model.gguf.partial-"), std::string::npos) << leftovers(dir, "log")[0];
    ::kill(pid, SIGTERM);
    int signal_number = 0;
    const int exit_code = wait_for_exit(pid, &signal_number);
    EXPECT_EQ(exit_code, -1);
    EXPECT_EQ(signal_number, SIGTERM) << "the exit status still says the signal ended it";
    EXPECT_EQ(leftovers(dir, "log"), std::vector<std::string>{});
    fs::remove_all(dir);
}

}  // namespace
}  // namespace tern
