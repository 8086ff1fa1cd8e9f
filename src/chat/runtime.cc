#include "chat/runtime.h"

namespace tern::chat::jinja {

Status Budget::charge(uint64_t units) {
    used_ = units > UINT64_MAX - used_ ? UINT64_MAX : used_ + units;
    if (used_ > options_.max_work) {
        return {StatusCode::kResourceExhausted,
                "the template did more work than allowed (" + std::to_string(options_.max_work) +
                    " units of loop iterations, items and bytes built); is it looping without end?"};
    }
    return Status::ok();
}

Status Budget::charge_string(size_t bytes) {
    if (bytes > options_.max_output_bytes) {
        return {StatusCode::kResourceExhausted, "the template built a string of " + std::to_string(bytes) +
                                                    " bytes, more than the limit of " +
                                                    std::to_string(options_.max_output_bytes)};
    }
    return charge(bytes / 64 + 1);
}

Result<std::string> Budget::str(const Value& value) {
    std::string text = value.str(options_.max_output_bytes);
    TERN_RETURN_IF_ERROR(charge_string(text.size()));
    return text;
}

Result<std::string> Budget::repr(const Value& value) {
    std::string text = value.repr(options_.max_output_bytes);
    TERN_RETURN_IF_ERROR(charge_string(text.size()));
    return text;
}

Result<std::vector<Value>> bind_args(std::string_view function, const CallArgs& args,
                                     std::initializer_list<std::string_view> params,
                                     std::initializer_list<Value> defaults) {
    const std::vector<std::string_view> names(params);
    std::vector<Value> bound(names.size());
    std::vector<bool> given(names.size(), false);
    if (args.positional.size() > names.size()) {
        return invalid_argument(std::string(function) + "() takes at most " + std::to_string(names.size()) +
                                " argument(s), " + std::to_string(args.positional.size()) + " given");
    }
    for (size_t i = 0; i < args.positional.size(); ++i) {
        bound[i] = args.positional[i];
        given[i] = true;
    }
    for (const auto& [key, value] : args.keywords) {
        size_t idx = 0;
        while (idx < names.size() && names[idx] != key) ++idx;
        if (idx == names.size()) {
            return invalid_argument(std::string(function) + "() got an unexpected keyword argument '" + key + "'");
        }
        if (given[idx]) {
            return invalid_argument(std::string(function) + "() got multiple values for argument '" + key + "'");
        }
        bound[idx] = value;
        given[idx] = true;
    }
    const size_t first_default = names.size() - defaults.size();
    size_t idx = first_default;
    for (const Value& value : defaults) {
        if (!given[idx]) bound[idx] = value;
        ++idx;
    }
    return bound;
}

}  // namespace tern::chat::jinja
