#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <fmt/format.h>
#include <pcre2.h>

#include "base/log.h"
#include "base/printable.h"

namespace tern {
namespace {

pcre2_code* as_code(void* code) { return static_cast<pcre2_code*>(code); }

struct MatchDataDeleter {
    void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};

std::string pcre2_message(int error_code) {
    PCRE2_UCHAR buffer[256];
    pcre2_get_error_message(error_code, buffer, sizeof(buffer));
    return reinterpret_cast<const char*>(buffer);
}

}  // namespace

void Regex::CodeDeleter::operator()(void* code) const { pcre2_code_free(as_code(code)); }

Regex::~Regex() = default;

Result<Regex> Regex::compile(std::string_view pattern) {
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    const uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options,
                                     &error_code, &error_offset, nullptr);
    if (code == nullptr) {
        return invalid_argument(fmt::format("cannot compile pre-tokenizer regex '{}' at offset {}: {}",
                                            printable(pattern), error_offset, pcre2_message(error_code)));
    }
    // JIT is only a speed-up; the interpreter gives the same matches when it is unavailable.
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    Regex regex;
    regex.pattern_ = std::string(pattern);
    regex.code_.reset(code);
    return regex;
}

bool Regex::for_each_match(std::string_view subject, const std::function<void(size_t, size_t)>& on_match) const {
    pcre2_code* code = as_code(code_.get());
    std::unique_ptr<pcre2_match_data, MatchDataDeleter> data(pcre2_match_data_create_from_pattern(code, nullptr));
    const auto* text = reinterpret_cast<PCRE2_SPTR>(subject.data());
    size_t offset = 0;
    while (offset < subject.size()) {
        int rc = pcre2_match(code, text, subject.size(), offset, PCRE2_NO_UTF_CHECK, data.get(), nullptr);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
            // Long runs (e.g. of whitespace) can exhaust the JIT stack; the interpreter keeps its state on the heap.
            rc = pcre2_match(code, text, subject.size(), offset, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, data.get(),
                             nullptr);
        }
        if (rc == PCRE2_ERROR_NOMATCH) return true;
        if (rc < 0) {
            log_warn("pre-tokenizer regex failed on a {}-byte piece: {}", subject.size(), pcre2_message(rc));
            return false;
        }
        const PCRE2_SIZE* vector = pcre2_get_ovector_pointer(data.get());
        const size_t begin = vector[0];
        const size_t end = vector[1];
        if (end > begin) {
            on_match(begin, end);
            offset = end;
        } else {
            // An empty match yields no piece; step over one character to make progress.
            offset = begin + 1;
            while (offset < subject.size() && (static_cast<uint8_t>(subject[offset]) & 0xC0) == 0x80) ++offset;
        }
    }
    return true;
}

}  // namespace tern
