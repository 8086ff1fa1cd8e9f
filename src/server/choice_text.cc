#include "server/choice_text.h"

namespace tern::server {

ChoiceText::ChoiceText(const Tokenizer& tokenizer, std::vector<std::string> stop_strings, int min_tokens,
                       bool render_special)
    : early_(tokenizer, render_special), text_(tokenizer, std::move(stop_strings), render_special),
      num_early_left_(min_tokens),
      in_early_(min_tokens > 0) {}

std::string ChoiceText::push(int32_t token) {
    if (!in_early_) return text_.push(token);
    std::string text = early_.push(token);
    --num_early_left_;
    if (num_early_left_ <= 0 && early_.pending_bytes() == 0) in_early_ = false;
    return text;
}

std::string ChoiceText::finish() { return in_early_ ? early_.flush() : text_.finish(); }

}  // namespace tern::server
