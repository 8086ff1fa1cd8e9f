// Values of the Jinja2 interpreter, with the Python semantics templates rely on: truthiness, str() and repr(),
// equality across int/float/bool, ordering, and dicts that keep insertion order. Lists and dicts are shared and
// never mutated after construction (the sandbox is immutable); only namespace() objects change, by attribute
// assignment, and the evaluator owns and clears them at the end of a render so that cycles cannot leak.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tern::chat::jinja {

class Value;
struct Dict;
struct Callable;
using List = std::vector<Value>;

enum class ValueKind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kCallable };

// Containers nested deeper than this are refused when built; walks over values stop at kMaxWalkDepth.
inline constexpr int kMaxValueDepth = 128;
inline constexpr int kMaxWalkDepth = 256;

class Value {
public:
    Value() = default;  // undefined, like a name nobody set

    static Value undefined(std::string hint);
    static Value none();
    static Value boolean(bool value);
    static Value integer(int64_t value);
    static Value number(double value);
    static Value string(std::string value);
    static Value list(List items);
    static Value tuple(List items);
    static Value dict(Dict entries);
    static Value namespace_object(Dict entries);
    static Value callable(Callable callable);

    ValueKind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == ValueKind::kUndefined; }
    bool is_none() const { return kind_ == ValueKind::kNone; }
    bool is_bool() const { return kind_ == ValueKind::kBool; }
    bool is_int() const { return kind_ == ValueKind::kInt; }
    bool is_float() const { return kind_ == ValueKind::kFloat; }
    bool is_string() const { return kind_ == ValueKind::kString; }
    bool is_list() const { return kind_ == ValueKind::kList; }  // lists and tuples
    bool is_dict() const { return kind_ == ValueKind::kDict; }  // dicts and namespaces
    bool is_callable() const { return kind_ == ValueKind::kCallable; }
    bool is_tuple() const { return kind_ == ValueKind::kList && flag_; }
    bool is_namespace() const { return kind_ == ValueKind::kDict && flag_; }
    bool is_mapping() const { return kind_ == ValueKind::kDict && !flag_; }
    // Python's bool is an int: True + 1 == 2.
    bool is_integral() const { return kind_ == ValueKind::kInt || kind_ == ValueKind::kBool; }
    bool is_numeric() const { return is_integral() || kind_ == ValueKind::kFloat; }

    bool as_bool() const { return flag_; }
    int64_t as_int() const { return kind_ == ValueKind::kBool ? (flag_ ? 1 : 0) : int_; }
    double as_double() const { return kind_ == ValueKind::kFloat ? float_ : static_cast<double>(as_int()); }
    const std::string& as_string() const { return text_ ? *text_ : empty_string(); }
    const List& as_list() const { return *list_; }
    const Dict& as_dict() const { return *dict_; }
    Dict& namespace_dict() const { return *dict_; }
    const Callable& as_callable() const { return *callable_; }
    // Why an undefined value is undefined ("'x' is undefined"), for the error raised when it is misused.
    const std::string& undefined_hint() const { return as_string(); }
    // Nesting depth of containers: 0 for scalars, 1 for a flat list.
    int depth() const { return depth_; }
    // What a full walk of the value costs (comparing, printing, serializing it): 1 per value plus 1 per 64 bytes of
    // text, summed over the items of containers, saturating. Containers share their items, so `[[x] * 1000] * 1000`
    // is cheap to build but a million to walk; a namespace counts 1 (it compares by identity, prints bounded).
    uint64_t weight() const { return weight_; }
    // The shared object of a container or callable (identity for namespaces), null for scalars.
    const void* identity() const;

    bool truthy() const;
    // Python str() and repr(). Past max_bytes the text is cut (within max_bytes + one item), so a caller that
    // gets more than max_bytes knows the whole would not fit without building it.
    std::string str(size_t max_bytes = SIZE_MAX) const;
    std::string repr(size_t max_bytes = SIZE_MAX) const;
    // repr() cut to a couple of hundred bytes, for error messages.
    std::string brief_repr() const;
    const char* type_name() const;

private:
    static const std::string& empty_string();

    ValueKind kind_ = ValueKind::kUndefined;
    bool flag_ = false;  // the bool; a tuple; a namespace
    int depth_ = 0;
    uint64_t weight_ = 1;
    union {
        int64_t int_ = 0;
        double float_;
    };
    // A string, or the hint of an undefined. Shared and immutable, so copying a value never copies text.
    std::shared_ptr<const std::string> text_;
    std::shared_ptr<List> list_;
    std::shared_ptr<Dict> dict_;
    std::shared_ptr<const Callable> callable_;
};

// An insertion-ordered dict with Python key equality (1, 1.0 and True are one key). Chat templates hold small
// dicts, so lookups are linear.
struct Dict {
    std::vector<std::pair<Value, Value>> entries;

    const Value* find(const Value& key) const;
    const Value* find(std::string_view key) const;
    void set(Value key, Value value);
    size_t size() const { return entries.size(); }
};

// Something a template can call: a global function, a bound method, a macro or loop.cycle.
struct Callable {
    enum class Kind { kGlobal, kMethod, kMacro, kLoopCycle };
    Kind kind = Kind::kGlobal;
    std::string name;
    Value receiver;              // kMethod: the object; kLoopCycle: the 0-based loop index
    const void* node = nullptr;  // kMacro: the defining statement (owned by the template)
};

bool values_equal(const Value& a, const Value& b);
// Python's ordering: <0, 0 or >0; nullopt when '<' is not supported between the two types.
std::optional<int> compare_values(const Value& a, const Value& b);

}  // namespace tern::chat::jinja
