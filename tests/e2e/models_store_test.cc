// `tern models` end to end against nginx on loopback serving GGUF files, as a user's mirror would: a pull
// interrupted halfway (SIGINT) and run again resumes with Range and ends with the published checksum; a corrupted
// byte is found by `verify` and by the pull's own check; `use` and `rollback` switch what `tern serve -m NAME`
// loads; concurrent pulls into one name each install whole.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/sha256.h"
#include "run_command.h"
#include "serve_process.h"

namespace tern::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// nginx in the foreground, one process, serving `www` at a rate that makes a download last a few seconds.
class Nginx {
public:
    Nginx(const std::string& dir, int64_t bytes_per_second) : dir_(dir), port_(free_port()) {
        fs::create_directories(dir + "/www");
        std::ofstream(dir + "/nginx.conf")
            << "daemon off;\nmaster_process off;\nerror_log " << dir << "/error.log;\npid " << dir << "/nginx.pid;\n"
            << "events {}\nhttp {\n  access_log " << dir << "/access.log;\n"
            << "  client_body_temp_path " << dir << ";\n  proxy_temp_path " << dir << ";\n"
            << "  fastcgi_temp_path " << dir << ";\n  uwsgi_temp_path " << dir << ";\n  scgi_temp_path " << dir
            << ";\n  server {\n    listen 127.0.0.1:" << port_ << ";\n    root " << dir << "/www;\n"
            << "    limit_rate " << bytes_per_second << ";\n  }\n}\n";
        pid_ = spawn_with_log({TERN_NGINX, "-p", dir, "-c", dir + "/nginx.conf"}, dir + "/stderr.log");
        for (auto start = Clock::now(); Clock::now() - start < std::chrono::seconds(10);) {
            if (http_get(port_, "/").status != 0) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }
    ~Nginx() {
        ::kill(pid_, SIGTERM);
        ::waitpid(pid_, nullptr, 0);
    }
    std::string www() const { return dir_ + "/www"; }
    std::string url(const std::string& file) const { return "http://127.0.0.1:" + std::to_string(port_) + "/" + file; }
    std::string access_log() const { return read_file(dir_ + "/access.log"); }
    int port() const { return port_; }

private:
    std::string dir_;
    int port_;
    pid_t pid_ = -1;
};

// Puts `model` in www as `name` with its published checksum (NAME.sha256, as sha256sum writes it).
std::string publish(const Nginx& nginx, const std::string& model, const std::string& name) {
    fs::copy_file(model, nginx.www() + "/" + name, fs::copy_options::overwrite_existing);
    const std::string sha = to_hex(sha256_of_file(model).value());
    std::ofstream(nginx.www() + "/" + name + ".sha256") << sha << "  " << name << "\n";
    return sha;
}

class ModelsStore : public ::testing::Test {
protected:
    void SetUp() override {
        if (std::string(TERN_NGINX).empty()) GTEST_SKIP() << "nginx is not installed (scripts/install-deps --test)";
        dir_ = temp_dir() + "/models-store-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name();
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        root_ = dir_ + "/root";
    }
    void TearDown() override { fs::remove_all(dir_); }

    CommandResult models(const std::string& args) { return run_tern("models " + args + " --root " + root_); }
    pid_t start_pull(const std::string& url, const std::string& name, const std::string& log) {
        return spawn_with_log({TERN_BINARY, "models", "pull", url, "--name", name, "--root", root_}, log, true);
    }

    std::string dir_;
    std::string root_;
};

uint64_t partial_bytes(const std::string& root) {
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator(root + "/.downloads", error)) {
        if (entry.path().extension() == ".partial") return fs::file_size(entry.path(), error);
    }
    return 0;
}

TEST_F(ModelsStore, AnInterruptedPullResumesAndEndsWithThePublishedChecksum) {
    const std::string model = small_model_path();
    const uint64_t size = fs::file_size(model);
    Nginx nginx(dir_ + "/nginx", static_cast<int64_t>(size / 4));  // about four seconds a pull
    const std::string sha = publish(nginx, model, "small.gguf");
    const pid_t pull = start_pull(nginx.url("small.gguf"), "small", dir_ + "/pull1.log");
    for (auto start = Clock::now(); partial_bytes(root_) < size * 35 / 100;) {
        ASSERT_LT(Clock::now() - start, std::chrono::seconds(30)) << read_file(dir_ + "/pull1.log");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pull, SIGINT);  // Ctrl-C
    int status = 0;
    ::waitpid(pull, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << read_file(dir_ + "/pull1.log");
    const uint64_t kept = partial_bytes(root_);
    ASSERT_GE(kept, size * 35 / 100);
    ASSERT_LT(kept, size);
    EXPECT_NE(models("list").out.find("is empty"), std::string::npos) << "nothing is installed before the pull ends";

    const CommandResult resumed = models("pull " + nginx.url("small.gguf") + " --name small");
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    EXPECT_NE(resumed.out.find("installed small@v1"), std::string::npos) << resumed.out;
    EXPECT_NE(resumed.out.find("checksum published"), std::string::npos) << resumed.out;
    EXPECT_NE(resumed.out.find("resumed at"), std::string::npos) << resumed.out;
    EXPECT_NE(resumed.out.find(sha), std::string::npos) << resumed.out;
    EXPECT_NE(nginx.access_log().find("\"GET /small.gguf HTTP/1.1\" 206 "), std::string::npos) << nginx.access_log();
    const CommandResult verify = models("verify small");
    EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
    EXPECT_EQ(partial_bytes(root_), 0u) << "the download folder keeps nothing but lock files";
}

TEST_F(ModelsStore, ACorruptedByteIsDetected) {
    const std::string model = tiny_model_path();
    Nginx nginx(dir_ + "/nginx", 1 << 30);
    publish(nginx, model, "tiny.gguf");
    ASSERT_EQ(models("pull " + nginx.url("tiny.gguf") + " --name tiny").exit_code, 0);
    // In the store: verify finds it.
    const std::string stored = root_ + "/tiny/v1/model.gguf";
    std::fstream file(stored, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(fs::file_size(stored) / 2));
    file.put('\x5a');
    file.close();
    const CommandResult verify = models("verify");
    EXPECT_EQ(verify.exit_code, 1);
    EXPECT_NE(verify.out.find("tiny@v1 CORRUPT"), std::string::npos) << verify.out;
    EXPECT_NE(verify.err.find("pull them again"), std::string::npos) << verify.err;
    // On the wire: the pull's check refuses it and installs nothing.
    fs::copy_file(stored, nginx.www() + "/tiny.gguf", fs::copy_options::overwrite_existing);
    const CommandResult pull = models("pull " + nginx.url("tiny.gguf") + " --name other");
    EXPECT_EQ(pull.exit_code, 1);
    EXPECT_NE(pull.err.find("checksum mismatch"), std::string::npos) << pull.err;
    EXPECT_EQ(models("list").out.find("other"), std::string::npos);
    EXPECT_EQ(partial_bytes(root_), 0u);
}

TEST_F(ModelsStore, AFullDiskIsReportedAndThePullResumesOnceThereIsRoom) {
    const std::string model = tiny_model_path();
    Nginx nginx(dir_ + "/nginx", 1 << 30);
    publish(nginx, model, "tiny.gguf");
    // A file-size limit fails the write as a full disk does (EFBIG where ENOSPC would be), without a disk to fill.
    const CommandResult full = run_tern_with_prefix("prlimit --fsize=300000 ", "models pull " + nginx.url("tiny.gguf") +
                                                                                " --name tiny --root " + root_);
    EXPECT_EQ(full.exit_code, 1);
    EXPECT_NE(full.err.find("free space (or raise the file-size limit) and run the same pull again"),
              std::string::npos)
        << full.err;
    EXPECT_NE(models("list").out.find("is empty"), std::string::npos);
    EXPECT_EQ(partial_bytes(root_), 300000u);
    const CommandResult resumed = models("pull " + nginx.url("tiny.gguf") + " --name tiny");
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    EXPECT_NE(resumed.out.find("resumed at 300000 bytes"), std::string::npos) << resumed.out;
}

TEST_F(ModelsStore, UseAndRollbackSwitchWhatServeLoads) {
    Nginx nginx(dir_ + "/nginx", 1 << 30);
    publish(nginx, tiny_model_path(), "tiny.gguf");
    publish(nginx, kStoriesModel, "stories.gguf");
    ASSERT_EQ(models("pull " + nginx.url("tiny.gguf") + " --name m").exit_code, 0);
    const CommandResult second = models("pull " + nginx.url("stories.gguf") + " --name m");
    ASSERT_EQ(second.exit_code, 0) << second.err;
    EXPECT_NE(second.out.find("current stays as it was"), std::string::npos) << second.out;
    ::setenv("TERN_HOME", root_.c_str(), 1);
    const auto served_file = [&]() {
        ServeProcess server;
        const std::string error = server.start({"-m", "m"});
        EXPECT_EQ(error, "");
        EXPECT_EQ(http_get(server.port(), "/v1/models").body.find("\"id\":\"m\"") != std::string::npos, true)
            << http_get(server.port(), "/v1/models").body;
        const std::string log = server.log();
        const size_t from = log.find("' from ");
        return from == std::string::npos ? log : log.substr(from + 7, log.find(':', from + 7) - from - 7);
    };
    EXPECT_EQ(served_file(), root_ + "/m/v1/model.gguf");
    ASSERT_EQ(models("use m@v2").exit_code, 0);
    EXPECT_EQ(served_file(), root_ + "/m/v2/model.gguf");
    ASSERT_EQ(models("rollback m").exit_code, 0);
    EXPECT_EQ(served_file(), root_ + "/m/v1/model.gguf");
    const CommandResult again = models("rollback m");
    EXPECT_EQ(again.exit_code, 1);
    EXPECT_NE(again.err.find("no earlier version"), std::string::npos) << again.err;
    ::unsetenv("TERN_HOME");
}

TEST_F(ModelsStore, ConcurrentPullsIntoOneNameDoNotCorruptEachOther) {
    const uint64_t size = fs::file_size(small_model_path());
    Nginx nginx(dir_ + "/nginx", static_cast<int64_t>(size));  // about a second a pull, so they overlap
    publish(nginx, small_model_path(), "a.gguf");
    publish(nginx, tiny_model_path(), "b.gguf");
    std::vector<pid_t> pulls;
    for (const char* file : {"a.gguf", "b.gguf", "a.gguf", "b.gguf"}) {
        pulls.push_back(start_pull(nginx.url(file), "m", dir_ + "/pull-" + std::to_string(pulls.size()) + ".log"));
    }
    for (size_t idx = 0; idx < pulls.size(); ++idx) {
        int status = 0;
        ::waitpid(pulls[idx], &status, 0);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
            << read_file(dir_ + "/pull-" + std::to_string(idx) + ".log");
    }
    const CommandResult list = models("list --json");
    EXPECT_NE(list.out.find("\"version\": \"v1\""), std::string::npos) << list.out;
    EXPECT_NE(list.out.find("\"version\": \"v2\""), std::string::npos) << list.out;
    EXPECT_EQ(list.out.find("\"version\": \"v3\""), std::string::npos) << "the same file is installed once";
    const CommandResult verify = models("verify m");
    EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
    EXPECT_EQ(partial_bytes(root_), 0u);
}

}  // namespace
}  // namespace tern::testing
