// Resumable downloads against a scripted HTTP server on loopback whose every answer the test writes by hand: an
// honest server, one that drops the connection halfway, one that ignores Range, and ones that lie about it.
#include "store/download.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>

#include "base/sha256.h"
#include "store/model_store.h"
#include "store/pull.h"
#include "store_test_files.h"

namespace tern::store {
namespace {

namespace fs = std::filesystem;

struct Reply {
    std::string head;         // status line and headers, without the blank line
    std::string body;
    size_t send_bytes = SIZE_MAX;  // of the body; fewer, then the connection is closed (an interrupted transfer)
};

// Answers each connection's one request with what the handler returns, then closes it.
class ScriptedServer {
public:
    using Handler = std::function<Reply(const std::string& path, const std::string& request)>;
    explicit ScriptedServer(Handler handler) : handler_(std::move(handler)) {
        listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t size = sizeof(address);
        ::bind(listener_, reinterpret_cast<sockaddr*>(&address), size);
        ::listen(listener_, 16);
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &size);
        port_ = ntohs(address.sin_port);
        thread_ = std::thread([this] { serve(); });
    }
    ~ScriptedServer() {
        stopping_ = true;
        ::shutdown(listener_, SHUT_RDWR);
        ::close(listener_);
        thread_.join();
    }
    std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
    std::vector<std::string> requests() {
        std::lock_guard<std::mutex> lock(mutex_);
        return requests_;
    }

private:
    void serve() {
        while (!stopping_) {
            const int fd = ::accept(listener_, nullptr, nullptr);
            if (fd < 0) return;
            std::string request;
            char buffer[4096];
            while (request.find("\r\n\r\n") == std::string::npos) {
                const ssize_t count = ::recv(fd, buffer, sizeof(buffer), 0);
                if (count <= 0) break;
                request.append(buffer, static_cast<size_t>(count));
            }
            const size_t space = request.find(' ');
            const std::string path = request.substr(space + 1, request.find(' ', space + 1) - space - 1);
            {
                std::lock_guard<std::mutex> lock(mutex_);
                requests_.push_back(request);
            }
            const Reply reply = handler_(path, request);
            const std::string bytes =
                reply.head + "\r\nConnection: close\r\n\r\n" + reply.body.substr(0, std::min(reply.send_bytes, reply.body.size()));
            ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
            ::shutdown(fd, SHUT_RDWR);
            ::close(fd);
        }
    }

    Handler handler_;
    int listener_ = -1;
    int port_ = 0;
    std::atomic<bool> stopping_{false};
    std::thread thread_;
    std::mutex mutex_;
    std::vector<std::string> requests_;
};

std::string header_value(const std::string& request, const std::string& name) {
    const size_t at = request.find("\r\n" + name + ": ");
    if (at == std::string::npos) return "";
    const size_t start = at + name.size() + 4;
    return request.substr(start, request.find("\r\n", start) - start);
}

Reply full_reply(const std::string& body, const std::string& etag = "\"e1\"") {
    return {"HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\nETag: " + etag, body};
}

Reply range_reply(const std::string& body, size_t start, size_t claimed_start, size_t total) {
    const std::string part = body.substr(start);
    return {"HTTP/1.1 206 Partial Content\r\nContent-Length: " + std::to_string(part.size()) +
                "\r\nETag: \"e1\"\r\nContent-Range: bytes " + std::to_string(claimed_start) + "-" +
                std::to_string(claimed_start + part.size() - 1) + "/" + std::to_string(total),
            part};
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string test_body(size_t size) {
    std::string body(size, '\0');
    for (size_t idx = 0; idx < size; ++idx) body[idx] = static_cast<char>((idx * 131 + idx / 7) & 0xff);
    return body;
}

// A first response that stops halfway, then what `second` answers to the resumed request.
struct InterruptedThen {
    std::string body = test_body(200'000);
    std::function<Reply(const std::string& body, const std::string& request)> second;
    int calls = 0;
    Reply operator()(const std::string&, const std::string& request) {
        if (calls++ == 0) {
            Reply reply = full_reply(body);
            reply.send_bytes = body.size() / 2;
            return reply;
        }
        return second(body, request);
    }
};

Result<DownloadOutcome> download(const ScriptedServer& server, const std::string& partial) {
    DownloadOptions options;
    options.url = server.url("/model.gguf");
    options.partial_path = partial;
    options.stall_timeout = std::chrono::seconds(5);
    return download_to_file(options);
}

TEST(Download, AnInterruptedDownloadResumesWithRangeAndIfRange) {
    const std::string dir = testing::store_test_dir("download-resume");
    auto script = std::make_shared<InterruptedThen>();
    script->second = [](const std::string& body, const std::string& request) {
        const size_t start = std::stoul(header_value(request, "Range").substr(6));
        return range_reply(body, start, start, body.size());
    };
    ScriptedServer server([script](const std::string& path, const std::string& request) { return (*script)(path, request); });
    const Result<DownloadOutcome> first = download(server, dir + "/m.partial");
    ASSERT_FALSE(first.is_ok());
    EXPECT_NE(first.status().message().find("run the same pull again to resume"), std::string::npos)
        << first.status().message();
    EXPECT_EQ(fs::file_size(dir + "/m.partial"), script->body.size() / 2);
    const Result<DownloadOutcome> second = download(server, dir + "/m.partial");
    ASSERT_TRUE(second.is_ok()) << second.status().message();
    EXPECT_EQ(second.value().resumed_from, script->body.size() / 2);
    EXPECT_FALSE(second.value().restarted);
    EXPECT_EQ(read_file(dir + "/m.partial"), script->body);
    const std::string resumed_request = server.requests().at(1);
    EXPECT_EQ(header_value(resumed_request, "Range"), "bytes=" + std::to_string(script->body.size() / 2) + "-");
    EXPECT_EQ(header_value(resumed_request, "If-Range"), "\"e1\"");
}

TEST(Download, AServerThatIgnoresRangeStartsTheFileOver) {
    const std::string dir = testing::store_test_dir("download-ignore");
    auto script = std::make_shared<InterruptedThen>();
    script->second = [](const std::string& body, const std::string&) { return full_reply(body); };
    ScriptedServer server([script](const std::string& path, const std::string& request) { return (*script)(path, request); });
    ASSERT_FALSE(download(server, dir + "/m.partial").is_ok());
    const Result<DownloadOutcome> second = download(server, dir + "/m.partial");
    ASSERT_TRUE(second.is_ok()) << second.status().message();
    EXPECT_TRUE(second.value().restarted);
    EXPECT_EQ(second.value().resumed_from, 0u);
    EXPECT_EQ(read_file(dir + "/m.partial"), script->body);
}

TEST(Download, AServerThatSendsOtherBytesThanAskedIsRefusedAndThePartialRemoved) {
    const std::string dir = testing::store_test_dir("download-lie");
    auto script = std::make_shared<InterruptedThen>();
    // Answers the resumed request with the file's first bytes, and says so.
    script->second = [](const std::string& body, const std::string&) {
        return range_reply(body, 0, 0, body.size());
    };
    ScriptedServer server([script](const std::string& path, const std::string& request) { return (*script)(path, request); });
    ASSERT_FALSE(download(server, dir + "/m.partial").is_ok());
    const Result<DownloadOutcome> second = download(server, dir + "/m.partial");
    ASSERT_FALSE(second.is_ok());
    EXPECT_NE(second.status().message().find("does not serve byte ranges correctly"), std::string::npos)
        << second.status().message();
    EXPECT_NE(second.status().message().find("the partial download is removed"), std::string::npos);
    EXPECT_FALSE(fs::exists(dir + "/m.partial"));
    EXPECT_FALSE(fs::exists(dir + "/m.partial.json"));
}

TEST(Download, AFileThatChangedSizeOnTheServerIsNotSpliced) {
    const std::string dir = testing::store_test_dir("download-changed");
    auto script = std::make_shared<InterruptedThen>();
    script->second = [](const std::string& body, const std::string& request) {
        const size_t start = std::stoul(header_value(request, "Range").substr(6));
        return range_reply(body, start, start, body.size() + 10);
    };
    ScriptedServer server([script](const std::string& path, const std::string& request) { return (*script)(path, request); });
    ASSERT_FALSE(download(server, dir + "/m.partial").is_ok());
    const Result<DownloadOutcome> second = download(server, dir + "/m.partial");
    ASSERT_FALSE(second.is_ok());
    EXPECT_NE(second.status().message().find("the file changed"), std::string::npos) << second.status().message();
    EXPECT_FALSE(fs::exists(dir + "/m.partial"));
}

TEST(Download, HttpErrorsAreReportedWithTheStatus) {
    const std::string dir = testing::store_test_dir("download-404");
    ScriptedServer server([](const std::string&, const std::string&) {
        return Reply{"HTTP/1.1 404 Not Found\r\nContent-Length: 9", "not here\n"};
    });
    const Result<DownloadOutcome> outcome = download(server, dir + "/m.partial");
    ASSERT_FALSE(outcome.is_ok());
    EXPECT_NE(outcome.status().message().find("HTTP 404"), std::string::npos) << outcome.status().message();
    const Result<std::string> text = fetch_text(server.url("/m.sha256"), 4096, std::chrono::seconds(5));
    EXPECT_EQ(text.status().code(), StatusCode::kNotFound);
}

// Serves one GGUF at /model.gguf and, when `published` is set, a checksum at /model.gguf.sha256.
ScriptedServer::Handler model_server(const std::string& body, std::string published, std::string etag = "\"e1\"") {
    return [body, published, etag](const std::string& path, const std::string&) {
        if (path == "/model.gguf") return full_reply(body, etag);
        if (path == "/model.gguf.sha256" && !published.empty()) {
            return Reply{"HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(published.size()), published};
        }
        return Reply{"HTTP/1.1 404 Not Found\r\nContent-Length: 0", ""};
    };
}

TEST(Pull, APublishedChecksumIsCheckedAndAMismatchInstallsNothing) {
    const std::string dir = testing::store_test_dir("pull-published");
    const std::string body = read_file(testing::write_test_gguf(dir + "/source.gguf", 7));
    const std::string right = to_hex(sha256(body));
    {
        ScriptedServer server(model_server(body, right + "  model.gguf\n"));
        ModelStore store(dir + "/root");
        const Result<PullOutcome> outcome = pull(store, {.source = server.url("/model.gguf"), .name = "m"});
        ASSERT_TRUE(outcome.is_ok()) << outcome.status().message();
        EXPECT_EQ(outcome.value().checksum_from, "published");
        EXPECT_EQ(outcome.value().sha256, right);
    }
    std::string wrong = right;
    wrong[0] = wrong[0] == '0' ? '1' : '0';
    ScriptedServer server(model_server(body, wrong + "  model.gguf\n"));
    ModelStore store(dir + "/root2");
    const Result<PullOutcome> outcome = pull(store, {.source = server.url("/model.gguf"), .name = "m"});
    ASSERT_FALSE(outcome.is_ok());
    EXPECT_NE(outcome.status().message().find("checksum mismatch"), std::string::npos) << outcome.status().message();
    EXPECT_FALSE(store.find("m").is_ok());
    for (const fs::directory_entry& entry : fs::directory_iterator(store.downloads_dir())) {
        EXPECT_EQ(entry.path().extension(), ".lock") << entry.path();
    }
}

TEST(Pull, AnEtagThatIsASha256IsCheckedLikeHuggingFacesLfsFiles) {
    const std::string dir = testing::store_test_dir("pull-etag");
    const std::string body = read_file(testing::write_test_gguf(dir + "/source.gguf", 8));
    ScriptedServer server(model_server(body, "", "\"" + std::string(64, 'a') + "\""));
    ModelStore store(dir + "/root");
    const Result<PullOutcome> outcome = pull(store, {.source = server.url("/model.gguf"), .name = "m"});
    ASSERT_FALSE(outcome.is_ok());
    EXPECT_NE(outcome.status().message().find("(etag)"), std::string::npos) << outcome.status().message();
}

TEST(Pull, AFileThatIsNotAGgufInstallsNothing) {
    const std::string dir = testing::store_test_dir("pull-not-gguf");
    ScriptedServer server(model_server("<html>a login page</html>", ""));
    ModelStore store(dir + "/root");
    const Result<PullOutcome> outcome = pull(store, {.source = server.url("/model.gguf"), .name = "m"});
    ASSERT_FALSE(outcome.is_ok());
    EXPECT_NE(outcome.status().message().find("not a GGUF model"), std::string::npos) << outcome.status().message();
    EXPECT_FALSE(store.find("m").is_ok());
}

}  // namespace
}  // namespace tern::store
