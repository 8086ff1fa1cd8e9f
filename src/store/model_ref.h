// Names in the model store: `name[@version]`, each part a file name of its own (letters, digits, '.', '_', '-',
// not starting with '.' or '-', at most 128 characters), and where the store lives.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace tern::store {

struct ModelRef {
    std::string name;
    std::string version;  // "" means the name's current version

    std::string to_string() const { return version.empty() ? name : name + "@" + version; }
};

Result<ModelRef> parse_model_ref(std::string_view text);
// Whether `text` is a valid name or version on its own ("" is not); `what` ("name", "version") is for the error.
Status check_store_word(std::string_view text, std::string_view what);

// The store's folder: `flag` when given, else $TERN_HOME, else $XDG_DATA_HOME/tern, else ~/.local/share/tern.
std::string store_root(const std::string& flag = "");

}  // namespace tern::store
