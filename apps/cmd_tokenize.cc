// tern tokenize: the token ids of a text (or a file's exact bytes), space-separated on one line.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "apps/commands.h"
#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"

namespace tern::apps {
namespace {

struct TokenizeOptions {
    std::string model_path;
    std::string text;
    std::string file_path;
    bool add_bos = false;
    bool parse_special = false;
};

Result<std::string> read_file_bytes(const std::string& path) {
    std::ifstream stream(path, std::ios::binary);
    if (!stream) return not_found(fmt::format("{}: cannot open", path));
    std::ostringstream bytes;
    bytes << stream.rdbuf();
    return bytes.str();
}

Status run_tokenize(const TokenizeOptions& options) {
    if (!options.file_path.empty() && !options.text.empty()) {
        return invalid_argument("give either TEXT or --file, not both");
    }
    std::string text = options.text;
    if (!options.file_path.empty()) {
        TERN_ASSIGN_OR_RETURN(text, read_file_bytes(options.file_path));
    }
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::open(options.model_path));
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, Tokenizer::from_gguf(*file));
    std::vector<int32_t> ids = tokenizer->encode(text, /*add_special=*/false, options.parse_special);
    if (options.add_bos && tokenizer->bos_id() >= 0) ids.insert(ids.begin(), tokenizer->bos_id());
    std::string line;
    for (int32_t id : ids) line += (line.empty() ? "" : " ") + std::to_string(id);
    std::cout << line << "\n";
    return Status::ok();
}

}  // namespace

void register_tokenize(CLI::App& app) {
    auto options = std::make_shared<TokenizeOptions>();
    CLI::App* command = app.add_subcommand("tokenize", "Print the token ids of a text");
    add_model_option(command, &options->model_path, "GGUF file with a vocabulary")->required();
    command->add_option("text", options->text, "Text to tokenize");
    command->add_option("--file", options->file_path, "Tokenize this file's bytes exactly as they are");
    command->add_flag("--add-bos", options->add_bos, "Prepend the BOS token");
    command->add_flag("--parse-special", options->parse_special, "Turn special-token text into special tokens");
    set_action(command, [options] { return run_tokenize(*options); });
}

}  // namespace tern::apps
