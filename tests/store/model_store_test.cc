// The store's bookkeeping (versions, current, history) against a simple model of it, over random operation
// sequences, with its invariants checked after every step; and installs racing on one name.
#include "store/model_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "store/manifest.h"
#include "store_test_files.h"

namespace tern::store {
namespace {

namespace fs = std::filesystem;
using testing::store_test_dir;
using testing::write_test_gguf;

// What the store should hold for one name.
struct ModelOfStore {
    std::map<std::string, std::string> versions;  // version -> sha256 hex
    std::string current;
    std::vector<std::string> history;

    std::string next_version() const {
        int highest = 0;
        for (const auto& [version, sha] : versions) {
            if (version.size() > 1 && version[0] == 'v' &&
                std::all_of(version.begin() + 1, version.end(), ::isdigit)) {
                highest = std::max(highest, std::stoi(version.substr(1)));
            }
        }
        return "v" + std::to_string(highest + 1);
    }
    void make_current(const std::string& version) {
        if (version == current) return;
        if (!current.empty()) history.push_back(current);
        current = version;
    }
    bool install(const std::string& sha, std::string version, bool make) {
        for (const auto& [existing, existing_sha] : versions) {
            if (existing_sha == sha) return true;
        }
        if (version.empty()) version = next_version();
        if (versions.count(version) != 0) return false;
        versions[version] = sha;
        if (current.empty() || make) make_current(version);
        return true;
    }
    bool use(const std::string& version) {
        if (versions.count(version) == 0) return false;
        make_current(version);
        return true;
    }
    bool rollback() {
        std::vector<std::string> rest = history;
        while (!rest.empty() && (versions.count(rest.back()) == 0 || rest.back() == current)) rest.pop_back();
        if (rest.empty()) return false;
        current = rest.back();
        rest.pop_back();
        history = rest;
        return true;
    }
    bool remove(const std::string& version) {
        if (version.empty() || (versions.count(version) != 0 && versions.size() == 1)) {
            const bool existed = !versions.empty();
            *this = ModelOfStore{};
            return existed;
        }
        if (versions.count(version) == 0 || version == current) return false;
        versions.erase(version);
        std::erase(history, version);
        return true;
    }
};

void expect_no_leftovers(const std::string& dir) {
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
        const std::string name = entry.path().filename().string();
        EXPECT_EQ(name.find(".staging-"), std::string::npos) << entry.path();
        EXPECT_EQ(name.find(".trash-"), std::string::npos) << entry.path();
        EXPECT_EQ(name.find(".tmp-"), std::string::npos) << entry.path();
    }
}

void expect_store_matches(const ModelStore& store, const ModelOfStore& model, const std::string& step) {
    SCOPED_TRACE(step);
    Result<StoredModel> found = store.find("m");
    expect_no_leftovers(store.root());
    if (model.versions.empty()) {
        EXPECT_FALSE(found.is_ok());
        EXPECT_FALSE(store.resolve({"m", ""}).is_ok());
        return;
    }
    ASSERT_TRUE(found.is_ok()) << found.status().message();
    expect_no_leftovers(store.root() + "/m");
    std::map<std::string, std::string> versions;
    for (const StoredVersion& stored : found.value().versions) {
        versions[stored.version] = stored.sha256;
        EXPECT_EQ(to_hex(sha256_of_file(stored.path).value()), stored.sha256) << stored.path;
    }
    EXPECT_EQ(versions, model.versions);
    EXPECT_EQ(found.value().current, model.current);
    EXPECT_EQ(found.value().history, model.history);
    Result<std::string> path = store.resolve({"m", ""});
    ASSERT_TRUE(path.is_ok()) << path.status().message();
    EXPECT_EQ(to_hex(sha256_of_file(path.value()).value()), model.versions.at(model.current));
}

TEST(ModelStore, RandomOperationsMatchASimpleModel) {
    const std::string dir = store_test_dir("random");
    std::vector<std::pair<std::string, std::string>> files;  // path, sha
    for (int seed = 0; seed < 6; ++seed) {
        const std::string path = write_test_gguf(dir + "/source-" + std::to_string(seed) + ".gguf", seed);
        files.emplace_back(path, to_hex(sha256_of_file(path).value()));
    }
    const std::vector<std::string> named_versions = {"", "", "a", "b", "v3", "v1", "nope"};
    for (uint32_t seed = 1; seed <= 6; ++seed) {
        ModelStore store(dir + "/root-" + std::to_string(seed));
        ModelOfStore model;
        std::mt19937 rng(seed);
        const auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
        for (int step = 0; step < 120; ++step) {
            const size_t op = pick(5);
            const std::string version = named_versions[pick(named_versions.size())];
            std::string what;
            bool expected_ok = false;
            bool ok = false;
            if (op == 0 || op == 1) {
                const auto& [path, sha] = files[pick(files.size())];
                fs::create_directories(store.downloads_dir());
                const std::string staged = store.downloads_dir() + "/staged.gguf";
                fs::copy_file(path, staged, fs::copy_options::overwrite_existing);
                const bool make = pick(2) == 0;
                what = "install " + version + (make ? " --use" : "");
                expected_ok = model.install(sha, version, make);
                StoredVersion facts{.version = version, .sha256 = sha};
                ok = store.install({"m", staged, facts, make}).is_ok();
            } else if (op == 2) {
                what = "use " + version;
                expected_ok = !version.empty() && model.use(version);
                ok = store.use({"m", version}).is_ok();
            } else if (op == 3) {
                what = "rollback";
                expected_ok = model.rollback();
                ok = store.rollback("m").is_ok();
            } else {
                const std::string target = pick(4) == 0 ? "" : version.empty() ? model.current : version;
                what = "rm " + target;
                expected_ok = model.remove(target);
                ok = store.remove({"m", target}).is_ok();
            }
            const std::string step_text = "seed " + std::to_string(seed) + " step " + std::to_string(step) + ": " + what;
            ASSERT_EQ(ok, expected_ok) << step_text;
            expect_store_matches(store, model, step_text);
            if (::testing::Test::HasFailure()) return;
        }
    }
}

TEST(ModelStore, ConcurrentInstallsIntoOneNameGetDistinctVersions) {
    const std::string dir = store_test_dir("concurrent");
    constexpr int kThreads = 4;
    constexpr int kEach = 3;
    std::vector<std::thread> threads;
    for (int thread = 0; thread < kThreads; ++thread) {
        threads.emplace_back([&dir, thread] {
            ModelStore store(dir + "/root");  // each thread its own object, as separate processes would be
            for (int idx = 0; idx < kEach; ++idx) {
                const int seed = thread * kEach + idx;
                fs::create_directories(store.downloads_dir());
                const std::string staged = store.downloads_dir() + "/staged-" + std::to_string(seed) + ".gguf";
                write_test_gguf(staged, 100 + seed);
                StoredVersion facts{.sha256 = to_hex(sha256_of_file(staged).value())};
                const Result<InstallOutcome> outcome = store.install({"m", staged, facts, true});
                EXPECT_TRUE(outcome.is_ok()) << outcome.status().message();
            }
        });
    }
    for (std::thread& thread : threads) thread.join();
    ModelStore store(dir + "/root");
    const Result<StoredModel> found = store.find("m");
    ASSERT_TRUE(found.is_ok());
    std::vector<std::string> versions;
    for (const StoredVersion& stored : found.value().versions) {
        versions.push_back(stored.version);
        EXPECT_EQ(to_hex(sha256_of_file(stored.path).value()), stored.sha256);
    }
    std::sort(versions.begin(), versions.end());
    std::vector<std::string> expected;
    for (int idx = 1; idx <= kThreads * kEach; ++idx) expected.push_back("v" + std::to_string(idx));
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(versions, expected);
    EXPECT_EQ(found.value().history.size(), static_cast<size_t>(kThreads * kEach - 1));
    expect_no_leftovers(dir + "/root/m");
}

TEST(ModelStore, NamesAreChecked) {
    EXPECT_TRUE(parse_model_ref("qwen3-0.6b@v2").is_ok());
    EXPECT_EQ(parse_model_ref("qwen3-0.6b@v2").value().version, "v2");
    for (const char* bad : {"", "../x", ".hidden", "a/b", "x@", "x@current", "x@history", "-flag", "a b"}) {
        const Result<ModelRef> ref = parse_model_ref(bad);
        EXPECT_FALSE(ref.is_ok()) << bad;
        if (!ref.is_ok()) {
            EXPECT_NE(ref.status().message().find("letters, digits"), std::string::npos) << bad;
        }
    }
}

TEST(ModelStore, AFileThatIsNotAGgufIsNotDescribed) {
    const std::string dir = store_test_dir("describe");
    std::ofstream(dir + "/x.gguf") << "this is not a model";
    StoredVersion facts;
    const Status status = describe_model_file(dir + "/x.gguf", facts);
    ASSERT_FALSE(status.is_ok());
    EXPECT_NE(status.message().find("not a GGUF model"), std::string::npos) << status.message();
    write_test_gguf(dir + "/y.gguf", 1);
    ASSERT_TRUE(describe_model_file(dir + "/y.gguf", facts).is_ok());
    EXPECT_EQ(facts.architecture, "llama");
    EXPECT_EQ(facts.weight_type, "f32");
}

}  // namespace
}  // namespace tern::store
