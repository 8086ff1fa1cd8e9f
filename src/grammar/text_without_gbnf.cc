#include "grammar/text_without_gbnf.h"

#include "grammar/gbnf.h"

namespace tern::grammar {
namespace {

// A class of one byte's complement, less `more` (each byte spelled as \xHH: any byte is safe there).
std::string class_without(char first, std::string_view more) {
    static const char* hex = "0123456789ABCDEF";
    std::string out = "[^";
    const auto add = [&](char c) {
        const auto byte = static_cast<unsigned char>(c);
        out += "\\x";
        out += hex[byte >> 4];
        out += hex[byte & 15];
    };
    add(first);
    for (char c : more) add(c);
    return out + "]";
}

}  // namespace

// With f the marker's first byte: the text is a run of chunks, then a dangling start of the marker. A chunk is a
// byte other than f, or some starts of the marker each cut short by the next f ("partials"), then a start cut short
// by a byte that neither continues it nor is f. Both repetitions are left-recursive.
Result<std::string> text_without_gbnf(std::string_view marker, const std::string& rule) {
    if (marker.empty()) return invalid_argument("text_without_gbnf: an empty marker");
    const char first = marker[0];
    if (marker.find(first, 1) != std::string_view::npos) {
        return invalid_argument("text_without_gbnf: the marker's first byte occurs in it again: " +
                                std::string(marker));
    }
    std::string starts;    // "f" | "fm1" | ... : the marker's proper prefixes
    std::string cut_short; // each proper prefix, then a byte that neither continues it nor is f
    for (size_t length = 1; length < marker.size(); ++length) {
        const std::string prefix = gbnf_literal(marker.substr(0, length));
        starts += (length > 1 ? " | " : "") + prefix;
        cut_short += (length > 1 ? " | " : "") + prefix + " " + class_without(first, marker.substr(length, 1));
    }
    if (marker.size() == 1) {  // a single byte: the text is just everything else
        return rule + " ::= " + rule + "-chunks\n" + rule + "-chunks ::= " + rule + "-chunks " +
               class_without(first, "") + " | \"\"\n";
    }
    std::string text;
    text += rule + " ::= " + rule + "-chunks " + rule + "-partials\n";
    text += rule + "-chunks ::= " + rule + "-chunks " + rule + "-chunk | \"\"\n";
    text += rule + "-chunk ::= " + class_without(first, "") + " | " + rule + "-partials (" + cut_short + ")\n";
    text += rule + "-partials ::= " + rule + "-partials (" + starts + ") | \"\"\n";
    return text;
}

}  // namespace tern::grammar
