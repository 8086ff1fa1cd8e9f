#include "tokenizer/spm.h"

#include <optional>

#include <fmt/format.h>

#include "tokenizer/symbol_merge.h"

namespace tern {
namespace {

// Every merged symbol is a token by construction, so only single characters can need the byte fallback.
void emit(const TokenTable& table, std::string_view piece, std::vector<int32_t>& out) {
    const int32_t token = table.find(piece);
    if (token != kNoToken) {
        out.push_back(token);
        return;
    }
    for (char byte : piece) {
        const int32_t byte_token = spm_byte_token(table, static_cast<uint8_t>(byte));
        if (byte_token != kNoToken) out.push_back(byte_token);
    }
}

}  // namespace

int32_t spm_byte_token(const TokenTable& table, uint8_t byte) {
    char name[7];
    fmt::format_to_n(name, sizeof(name), "<0x{:02X}>", byte);
    int32_t token = table.find(std::string_view(name, 6));
    if (token == kNoToken) token = table.find(std::string_view(reinterpret_cast<const char*>(&byte), 1));
    return token != kNoToken ? token : table.unk_id();
}

void spm_encode(const TokenTable& table, std::string_view text, std::vector<int32_t>& out) {
    std::vector<MergeSymbol> symbols = split_utf8_characters(text);
    // A pair merges when the joined text is a token; the highest token score goes first.
    merge_symbols<float>(symbols, [&](const MergeSymbol& a, const MergeSymbol& b) -> std::optional<float> {
        const int32_t token = table.find(text.substr(a.begin, a.length + b.length));
        if (token == kNoToken) return std::nullopt;
        return table.score(token);
    });
    for (const MergeSymbol& symbol : symbols) {
        if (symbol.length > 0) emit(table, text.substr(symbol.begin, symbol.length), out);
    }
}

}  // namespace tern
