#include "tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>

#include "base/printable.h"
#include "tokenizer/unicode.h"

namespace tern {
namespace {

// The regex lists of llama.cpp's llm_tokenizer_bpe, which take them from each model's tokenizer.json.
// `(?i:...)` contractions are spelled out per letter there (and here) so that only ASCII case folds.
constexpr std::string_view kGpt2 =
    R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re";
constexpr std::string_view kCjk = R"re([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)re";
constexpr std::string_view kContractions = R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))re";

enum RegexSet : int { kDefault, kGpt2Set, kLlama3, kQwen2, kDeepseekLlm, kDeepseekCoder, kFalcon, kStarcoder };

std::vector<std::string> regex_list(int set) {
    const std::string contractions(kContractions);
    const std::string gpt2(kGpt2);
    switch (set) {
        case kDefault:
            return {R"re([\p{P}\$\+<=>\^~\|]+)re", gpt2, R"re(\p{N}+)re", "[0-9][0-9][0-9]"};
        case kGpt2Set:
            return {gpt2};
        case kLlama3:
            return {contractions +
                    R"re(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"};
        case kQwen2:
            return {contractions +
                    R"re(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"};
        case kDeepseekLlm:
            // Written with \x{...} escapes: several of these letters have canonical singleton decompositions, and
            // a Unicode-normalising editor would turn them into lower code points and break the ranges.
            return {
                "[\r\n]",
                R"re(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293})re"
                R"re(\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A})re"
                R"re(\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556})re"
                R"re(\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF})re"
                R"re(\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D})re"
                R"re(\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D})re"
                R"re(\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3})re"
                R"re(\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107})re"
                R"re(\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D})re"
                R"re(\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184})re"
                R"re(\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D})re"
                R"re(\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF})re"
                R"re(\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F})re"
                R"re(\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2})re"
                R"re(\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)re",
                R"re(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)re",
                R"re(\s+$)re",
                std::string(kCjk),
                R"re(\p{N}+)re",
            };
        case kDeepseekCoder:
            return {"[\r\n]", R"re(\s?\p{L}+)re", R"re(\s?\p{P}+)re", std::string(kCjk), R"re(\p{N})re"};
        case kFalcon:
            return {R"re([\p{P}\$\+<=>\^~\|`]+)re", gpt2, "[0-9][0-9][0-9]"};
        case kStarcoder:
            return {R"re(\p{N})re", gpt2};
        default:
            return {};
    }
}

// Names as llama.cpp's vocabulary loader maps them; "gpt-neox" is tern's name for the plain GPT-2 split.
constexpr std::array kPreTokenizers = {
    PreTokenizerInfo{"default", kDefault, true, false, false},
    PreTokenizerInfo{"gpt-2", kGpt2Set, true, false, false},
    PreTokenizerInfo{"phi-2", kGpt2Set, true, false, false},
    PreTokenizerInfo{"mpt", kGpt2Set, true, false, false},
    PreTokenizerInfo{"olmo", kGpt2Set, true, false, false},
    PreTokenizerInfo{"gpt-neox", kGpt2Set, true, false, false},
    PreTokenizerInfo{"llama3", kLlama3, true, true, true},
    PreTokenizerInfo{"llama-v3", kLlama3, true, true, true},
    PreTokenizerInfo{"llama-bpe", kLlama3, true, true, true},
    PreTokenizerInfo{"falcon3", kLlama3, true, true, true},
    PreTokenizerInfo{"dbrx", kLlama3, true, false, false},
    PreTokenizerInfo{"smaug-bpe", kLlama3, true, false, false},
    PreTokenizerInfo{"qwen2", kQwen2, false, false, false},
    PreTokenizerInfo{"deepseek-r1-qwen", kQwen2, false, false, false},
    PreTokenizerInfo{"stablelm2", kQwen2, true, false, false},
    PreTokenizerInfo{"megrez", kQwen2, true, false, false},
    PreTokenizerInfo{"deepseek-llm", kDeepseekLlm, false, false, false},
    PreTokenizerInfo{"deepseek-coder", kDeepseekCoder, false, false, false},
    PreTokenizerInfo{"falcon", kFalcon, true, false, false},
    PreTokenizerInfo{"starcoder", kStarcoder, true, false, false},
    PreTokenizerInfo{"refact", kStarcoder, true, false, false},
    PreTokenizerInfo{"codeshell", kStarcoder, true, false, false},
    PreTokenizerInfo{"command-r", kStarcoder, false, false, false},
    PreTokenizerInfo{"smollm", kStarcoder, false, false, false},
};

// The text the regexes run on: one character per code point of the input. Whitespace above ASCII becomes \v, as
// llama.cpp does before its std::regex fallback, so \s means exactly its whitespace set; surrogates (which
// PCRE2 cannot take in UTF-8) stand in as a private-use character, the same class for every supported pattern.
struct MatchText {
    std::string text;
    std::vector<size_t> byte_of;  // byte offset of each code point, plus the total at the end

    explicit MatchText(const std::vector<uint32_t>& cpts) {
        text.reserve(cpts.size());
        byte_of.reserve(cpts.size() + 1);
        for (uint32_t cpt : cpts) {
            byte_of.push_back(text.size());
            if (cpt >= 0x80 && unicode::is_whitespace(cpt)) {
                text.push_back('\v');
            } else if (cpt >= 0xD800 && cpt <= 0xDFFF) {
                unicode::append_utf8(0xE000, text);
            } else {
                unicode::append_utf8(cpt, text);
            }
        }
        byte_of.push_back(text.size());
    }

    size_t cpt_at(size_t byte) const {
        return static_cast<size_t>(std::lower_bound(byte_of.begin(), byte_of.end(), byte) - byte_of.begin());
    }
};

using Piece = std::pair<size_t, size_t>;  // [begin, end) in code points

std::vector<Piece> split_pieces(const Regex& regex, const MatchText& match_text, const std::vector<Piece>& pieces) {
    std::vector<Piece> result;
    result.reserve(pieces.size() * 2);
    for (const auto& [begin, end] : pieces) {
        const size_t base = match_text.byte_of[begin];
        const std::string_view subject(match_text.text.data() + base, match_text.byte_of[end] - base);
        size_t last = begin;
        regex.for_each_match(subject, [&](size_t match_begin, size_t match_end) {
            const size_t first = match_text.cpt_at(base + match_begin);
            const size_t past = match_text.cpt_at(base + match_end);
            if (first > last) result.emplace_back(last, first);
            result.emplace_back(first, past);
            last = past;
        });
        if (last < end) result.emplace_back(last, end);
    }
    return result;
}

}  // namespace

const PreTokenizerInfo* find_pre_tokenizer(std::string_view name) {
    for (const PreTokenizerInfo& info : kPreTokenizers) {
        if (info.name == name) return &info;
    }
    return nullptr;
}

std::string supported_pre_tokenizers() {
    std::string names;
    for (const PreTokenizerInfo& info : kPreTokenizers) {
        if (!names.empty()) names += ", ";
        names += info.name;
    }
    return names;
}

Result<PreTokenizer> PreTokenizer::create(std::string_view name) {
    const PreTokenizerInfo* info = find_pre_tokenizer(name);
    if (info == nullptr) {
        return invalid_argument(fmt::format("unknown pre-tokenizer '{}' (tokenizer.ggml.pre); supported: {}",
                                            printable(name), supported_pre_tokenizers()));
    }
    std::vector<Regex> regexes;
    for (const std::string& pattern : regex_list(info->regex_set)) {
        TERN_ASSIGN_OR_RETURN(Regex regex, Regex::compile(pattern));
        regexes.push_back(std::move(regex));
    }
    return PreTokenizer(info, std::move(regexes));
}

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
    const std::vector<uint32_t> cpts = unicode::decode_utf8(text);
    if (cpts.empty()) return {};
    const MatchText match_text(cpts);
    std::vector<Piece> pieces = {{0, cpts.size()}};
    for (const Regex& regex : regexes_) pieces = split_pieces(regex, match_text, pieces);

    std::vector<std::string> words;
    words.reserve(pieces.size());
    for (const auto& [begin, end] : pieces) {
        std::string word;
        for (size_t i = begin; i < end; ++i) unicode::append_utf8(cpts[i], word);
        words.push_back(std::move(word));
    }
    return words;
}

}  // namespace tern
