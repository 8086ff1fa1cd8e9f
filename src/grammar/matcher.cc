#include "grammar/matcher.h"

#include <algorithm>

namespace tern::grammar {

bool Chart::spend_work() {
    if (work_left_ == 0 || set_work_ >= set_work_limit_) {
        exhausted_ = true;
        return false;
    }
    --work_left_;
    ++set_work_;
    return true;
}

void Chart::add(Item item) {
    if (!spend_work() || !in_last_set_.insert(item).second) return;
    if (grammar_->at(item.position).refers_to_rule()) waiting_.push_back(static_cast<uint32_t>(items_.size()));
    items_.push_back(item);
}

namespace {

Item advance(const Item& item) { return {item.position + 1, item.origin, 0, item.element}; }

}  // namespace

// Prediction and completion until nothing new: the classic Earley closure, with Aycock and Horspool's rule for
// empty rules (a reference to a nullable rule also steps over it at once) so that a rule completed empty in this
// set is not missed by items added after it.
void Chart::close_last_set() {
    const uint32_t current = static_cast<uint32_t>(set_begin_.size() - 1);
    for (size_t i = set_begin_.back(); i < items_.size(); ++i) {
        const Item item = items_[i];
        const Position& position = grammar_->at(item.position);
        if (position.refers_to_rule()) {
            predict(item, position, current);
        } else if (position.kind == Position::kEnd) {
            complete(item, current);
        }
    }
    in_last_set_.clear();
}

void Chart::predict(const Item& item, const Position& position, uint32_t current) {
    const bool nullable = grammar_->nullable(position.index);
    const auto predict_rule = [&](uint32_t element) {
        for (uint32_t alternative : grammar_->rules()[position.index].alternatives) {
            add({alternative, current, 0, element});
        }
    };
    if (position.kind == Position::kRule) {
        predict_rule(item.element);
        if (nullable) add(advance(item));
        return;
    }
    if (item.count >= kUnknownCount) {
        predict_rule(item.count - kUnknownCount + 1);
        leaves_.back() = true;
        return;
    }
    if (item.count < position.max) predict_rule(item.element);
    if (item.count >= position.min || nullable) add(advance(item));
}

void Chart::complete(const Item& item, uint32_t current) {
    const uint32_t rule = grammar_->rule_of(item.position);
    const size_t end = item.origin == current ? waiting_.size() : waiting_begin_[item.origin + 1];
    for (size_t w = waiting_begin_[item.origin]; w < end && spend_work(); ++w) {
        const Item caller = items_[waiting_[w]];
        const Position& position = grammar_->at(caller.position);
        if (position.index != rule) continue;
        if (position.kind == Position::kRule) {
            add(advance(caller));
        } else if (item.origin != current && (caller.count >= kUnknownCount || caller.count < position.max)) {
            // A repetition counts only elements that took bytes: an empty one was stepped over at prediction.
            add({caller.position, caller.origin, caller.count + 1, caller.element});
        }
    }
}

void Chart::start(const std::vector<Item>& items) {
    items_.clear();
    waiting_.clear();
    set_begin_.assign(1, 0);
    waiting_begin_.assign(1, 0);
    leaves_.assign(1, false);
    for (const Item& item : items) add(item);
    close_last_set();
}

void Chart::start_inside(const Item& start, const std::vector<Item>& callers) {
    items_.clear();
    waiting_.clear();
    set_begin_.assign(1, 0);
    waiting_begin_.assign(1, 0);
    leaves_.assign(1, false);
    add(start);
    for (const Item& caller : callers) add(caller);
    in_last_set_.clear();
}

bool Chart::scan(uint8_t byte) {
    const size_t begin = set_begin_.back();
    const size_t end = items_.size();
    set_begin_.push_back(end);
    waiting_begin_.push_back(waiting_.size());
    leaves_.push_back(false);
    set_work_ = 0;
    for (size_t i = begin; i < end; ++i) {
        const Item item = items_[i];
        if (grammar_->at(item.position).kind == Position::kBytes && grammar_->bytes_at(item.position)[byte]) {
            add(advance(item));
        }
    }
    if (items_.size() == end || exhausted_) {
        undo_last_set(end);
        return false;
    }
    close_last_set();
    if (exhausted_) {  // the set is not whole: it cannot be used
        undo_last_set(end);
        return false;
    }
    return true;
}

void Chart::undo_last_set(size_t items_before) {
    items_.resize(items_before);
    waiting_.resize(waiting_begin_.back());
    set_begin_.pop_back();
    waiting_begin_.pop_back();
    leaves_.pop_back();
    in_last_set_.clear();
}

void Chart::truncate(size_t sets) {
    TERN_CHECK(sets >= 1 && sets <= set_begin_.size()) << "truncate to " << sets << " of " << set_begin_.size();
    if (sets < set_begin_.size()) {
        items_.resize(set_begin_[sets]);
        set_begin_.resize(sets);
        waiting_.resize(waiting_begin_[sets]);
        waiting_begin_.resize(sets);
        leaves_.resize(sets);
    }
}

bool Chart::completed_from_start(uint32_t rule) const {
    for (size_t i = set_begin_.back(); i < items_.size(); ++i) {
        const Item& item = items_[i];
        if (item.origin == 0 && grammar_->at(item.position).kind == Position::kEnd &&
            grammar_->rule_of(item.position) == rule) {
            return true;
        }
    }
    return false;
}

ByteSet Chart::next_bytes() const {
    ByteSet bytes;
    for (size_t i = set_begin_.back(); i < items_.size(); ++i) {
        if (grammar_->at(items_[i].position).kind == Position::kBytes) bytes |= grammar_->bytes_at(items_[i].position);
    }
    return bytes;
}

std::vector<uint32_t> Chart::scannable_positions() const {
    std::vector<uint32_t> positions;
    for (size_t i = set_begin_.back(); i < items_.size(); ++i) {
        if (grammar_->at(items_[i].position).kind == Position::kBytes) positions.push_back(items_[i].position);
    }
    std::sort(positions.begin(), positions.end());
    positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
    return positions;
}

void Chart::start_at_root() {
    std::vector<Item> starts;
    for (uint32_t alternative : grammar_->rules()[0].alternatives) starts.push_back({alternative, 0, 0, 0});
    start(starts);
}

bool Chart::scan_all(std::string_view bytes) {
    const size_t before = sets();
    for (char byte : bytes) {
        if (!scan(static_cast<uint8_t>(byte))) {
            truncate(before);
            return false;
        }
    }
    return true;
}

Matcher::Matcher(const Grammar& grammar) : chart_(grammar) { chart_.start_at_root(); }

bool Matcher::accept_byte(uint8_t byte) { return chart_.scan(byte); }

bool Matcher::accept_bytes(std::string_view bytes) { return chart_.scan_all(bytes); }

void Matcher::rollback(size_t bytes) {
    TERN_CHECK(bytes <= bytes_accepted()) << "rollback of " << bytes << " bytes, " << bytes_accepted() << " read";
    chart_.truncate(chart_.sets() - bytes);
}

bool matches(const Grammar& grammar, std::string_view text) {
    Matcher matcher(grammar);
    return matcher.accept_bytes(text) && matcher.can_end();
}

bool matches_prefix(const Grammar& grammar, std::string_view text) {
    Matcher matcher(grammar);
    return matcher.accept_bytes(text) && (matcher.next_bytes().any() || matcher.can_end());
}

}  // namespace tern::grammar
