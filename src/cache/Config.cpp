//===- Config.cpp - config.yaml and where the cache lives -------------------===//
//
// yaml-cpp reports problems with exceptions; they are caught here, at the
// edge of the library, and become Errors.
//
//===----------------------------------------------------------------------===//
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "tritonc/base/FileSystem.h"
#include "tritonc/cache/Cache.h"

namespace tritonc::cache {

const std::vector<ConfigKey>& configKeys() {
  static const std::vector<ConfigKey> keys = {
      {"cache.enabled", "bool", "use the compile cache (default true)"},
      {"cache.dir", "path", "cache directory (default $XDG_CACHE_HOME/tritonc or ~/.cache/tritonc)"},
      {"cache.l2_ir.max_size_mb", "size", "size limit of the checked-IR level, MiB (default 1024)"},
      {"cache.l3_code.max_size_mb", "size",
       "size limit of the generated-code level, MiB (default 4096)"},
      {"cache.l3_code.ttl_days", "size",
       "evict generated code unused for this many days (default 30; 0: never)"},
  };
  return keys;
}

namespace {

// The index-th `:`-separated field of an /etc/passwd line; empty past the last.
std::string_view passwdField(std::string_view line, int index) {
  for (; index > 0; --index) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return {};
    line.remove_prefix(colon + 1);
  }
  return line.substr(0, line.find(':'));
}

// The home directory of the user's /etc/passwd entry (`name:x:uid:gid:gecos:home:shell`),
// read directly: tritonc is linked statically, and getpwuid would load the
// NSS modules of the glibc it was built with at run time.
std::string homeFromPasswd() {
  std::optional<std::string> passwd = readWholeFile("/etc/passwd");
  if (!passwd) return {};
  std::string uid = std::to_string(::getuid());
  for (std::string_view rest = *passwd; !rest.empty();) {
    size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (passwdField(line, 2) == uid) return std::string(passwdField(line, 5));
  }
  return {};
}

std::string homeDirectory() {
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return home;
  }
  static const std::string fromPasswd = homeFromPasswd();  // the config file and cache dir ask
  return fromPasswd;
}

const ConfigKey* findKey(std::string_view name) {
  for (const ConfigKey& key : configKeys()) {
    if (name == key.name) return &key;
  }
  return nullptr;
}

std::vector<std::string> splitDots(std::string_view key) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = key.find('.', start);
    parts.emplace_back(key.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

// The child of a map named `name`, found by iterating (yaml-cpp's operator[]
// inserts on non-const nodes and returns throwing "zombies" on const ones).
// Nodes are handles: `reset` rebinds one, while `=` would copy a value into
// the tree.
bool child(const YAML::Node& map, std::string_view name, YAML::Node* out) {
  if (!map.IsMap()) return false;
  for (const auto& item : map) {
    if (item.first.IsScalar() && item.first.Scalar() == name) {
      out->reset(item.second);
      return true;
    }
  }
  return false;
}

// parts[from..end) joined by dots: one level's key.
std::string joinParts(const std::vector<std::string>& parts, size_t from, size_t end) {
  std::string name = parts[from];
  for (size_t i = from + 1; i < end; ++i) name += "." + parts[i];
  return name;
}

// The value at parts[from..] under `node`, each level's key being one part or
// several joined by dots, the longest first.
bool lookupParts(const YAML::Node& node, const std::vector<std::string>& parts, size_t from,
                 YAML::Node* out) {
  for (size_t end = parts.size(); end > from; --end) {
    std::string name = joinParts(parts, from, end);
    YAML::Node next;
    if (!child(node, name, &next)) continue;
    if (end == parts.size()) {
      out->reset(next);
      return true;
    }
    if (lookupParts(next, parts, end, out)) return true;
  }
  return false;
}

// Removes every spelling of parts[from..] under `node` (flat, nested, mixed).
void removeParts(YAML::Node node, const std::vector<std::string>& parts, size_t from) {
  for (size_t end = parts.size(); end > from; --end) {
    std::string name = joinParts(parts, from, end);
    YAML::Node next;
    if (!child(node, name, &next)) continue;
    if (end == parts.size()) {
      node.remove(name);
    } else if (next.IsMap()) {
      removeParts(next, parts, end);
    }
  }
}

// The value at a dotted key, nested (`cache: {enabled: true}`), written flat
// (`cache.enabled: true`) or anything between (`cache.l3_code: {ttl_days: 7}`),
// as collectValues reads the file: a key it counts as known is one this finds.
bool lookup(const YAML::Node& root, std::string_view key, YAML::Node* out) {
  return lookupParts(root, splitDots(key), 0, out);
}

std::optional<bool> parseBool(std::string_view text) {
  // YAML's spellings (1.2 core: true/True/TRUE; 1.1 adds yes/no/on/off), and 1/0.
  for (const char* yes : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "1"}) {
    if (text == yes) return true;
  }
  for (const char* no :
       {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "0"}) {
    if (text == no) return false;
  }
  return std::nullopt;
}

// A non-negative integer; one too large for 64 bits saturates (a limit that
// big is no limit in practice, and the arithmetic on it saturates too).
std::optional<uint64_t> parseCount(std::string_view text) {
  if (text.empty() || text.find_first_not_of("0123456789") != text.npos) {
    return std::nullopt;
  }
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  uint64_t value = 0;
  for (char c : text) {
    auto digit = static_cast<uint64_t>(c - '0');
    if (value > (kMax - digit) / 10) return kMax;
    value = value * 10 + digit;
  }
  return value;
}

// ---- cache.dir: `~`, `$VAR` and `${VAR}` expanded, relative to the file ----------

bool isNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool isNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// A path as written in the configuration with a leading `~` or `~/` (the
// home directory) and `$VAR` / `${VAR}` (environment variables) expanded, as
// ccache expands its configuration's paths. An unset variable is an error
// (ccache's too); a `$` followed by neither a name nor `{` stays as it is.
Expected<std::string> expandPath(std::string_view text) {
  std::string out;
  if (!text.empty() && text[0] == '~') {
    if (text.size() > 1 && text[1] != '/') {
      size_t end = text.find('/');
      return Error{"'" + std::string(text.substr(0, end)) +
                   "' is not expanded (only '~' and '~/' are, as the home directory); write "
                   "the directory in full"};
    }
    std::string home = homeDirectory();
    if (home.empty()) return Error{"'~' names the home directory, and none is known (set HOME)"};
    out = home;
    text.remove_prefix(1);
  }
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$' || i + 1 == text.size() ||
        (text[i + 1] != '{' && !isNameStart(text[i + 1]))) {
      out += text[i];
      continue;
    }
    std::string name;
    if (text[i + 1] == '{') {
      size_t close = text.find('}', i + 2);
      if (close == std::string_view::npos) {
        return Error{"'${' without a closing '}' in '" + std::string(text) + "'"};
      }
      name = std::string(text.substr(i + 2, close - i - 2));
      if (name.empty() || !isNameStart(name[0]) ||
          !std::all_of(name.begin(), name.end(), isNameChar)) {
        return Error{"'${" + name + "}' is not an environment variable's name"};
      }
      i = close;
    } else {
      size_t end = i + 1;
      while (end < text.size() && isNameChar(text[end])) ++end;
      name = std::string(text.substr(i + 1, end - i - 1));
      i = end - 1;
    }
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return Error{"environment variable '" + name + "' is not set"};
    out += value;
  }
  return out;
}

// The absolute directory of the configuration file as named (its symlink, if
// it is one, not followed): what a relative cache.dir is relative to.
std::string directoryOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "" : slash == 0 ? "/" : path.substr(0, slash);
  if (!dir.empty() && dir[0] == '/') return dir;
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return dir.empty() ? "." : dir;
  std::string base = cwd;
  if (dir.empty() || dir == ".") return base;
  return (base == "/" ? base : base + "/") + dir;
}

// cache.dir as a compile uses it: expanded, and a relative one taken from the
// directory of the configuration file (not the current directory).
Expected<std::string> resolveCacheDir(std::string_view value, const std::string& configFile) {
  TRITONC_TRY(expanded, expandPath(value));
  if (expanded.empty()) {
    return Error{"cache.dir '" + std::string(value) + "' is empty once expanded"};
  }
  if (expanded[0] == '/') return expanded;
  std::string dir = directoryOf(configFile);
  return (dir == "/" ? dir : dir + "/") + expanded;
}

// Checks a value against its key's kind; returns the normalized spelling.
Expected<std::string> normalizeValue(const ConfigKey& key, std::string_view value) {
  std::string kind = key.kind;
  if (kind == "bool") {
    std::optional<bool> b = parseBool(value);
    if (!b) return Error{std::string(key.name) + " takes true or false, not '" + std::string(value) + "'"};
    return std::string(*b ? "true" : "false");
  }
  if (kind == "size") {
    if (!parseCount(value)) {
      return Error{std::string(key.name) + " takes a non-negative integer, not '" +
                   std::string(value) + "'"};
    }
    return std::to_string(*parseCount(value));
  }
  if (value.empty()) return Error{std::string(key.name) + " takes a non-empty path"};
  // Expanded when read; what cannot be expanded makes the file unusable.
  if (Expected<std::string> expanded = expandPath(value); !expanded) {
    return Error{std::string(key.name) + ": " + expanded.error().message};
  } else if (expanded->empty()) {
    return Error{std::string(key.name) + " '" + std::string(value) + "' is empty once expanded"};
  }
  return std::string(value);
}

// Every value of the file by dotted key, nested or flat alike: what the file
// means (to find misspelled keys and to compare an edit with). An empty
// section (`cache:` with nothing under it) has none.
void collectValues(const YAML::Node& node, const std::string& prefix,
                   std::vector<std::pair<std::string, std::string>>& out) {
  if (node.IsMap()) {
    for (const auto& item : node) {
      std::string name = item.first.as<std::string>();
      collectValues(item.second, prefix.empty() ? name : prefix + "." + name, out);
    }
  } else if (node.IsScalar()) {
    out.emplace_back(prefix, node.Scalar());
  } else if (!node.IsNull()) {
    out.emplace_back(prefix, YAML::Dump(node));
  }
}

std::vector<std::pair<std::string, std::string>> meaning(const YAML::Node& root) {
  std::vector<std::pair<std::string, std::string>> values;
  collectValues(root, "", values);
  std::sort(values.begin(), values.end());
  return values;
}

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// The end of the scalar starting at `column` of `line`: past its closing
// quote, or before a comment and trailing blanks.
size_t scalarEnd(const std::string& line, size_t column) {
  char quote = line[column];
  if (quote == '"' || quote == '\'') {
    for (size_t i = column + 1; i < line.size(); ++i) {
      if (quote == '"' && line[i] == '\\') {
        ++i;
      } else if (line[i] == quote) {
        if (quote == '\'' && i + 1 < line.size() && line[i + 1] == '\'') {
          ++i;  // '' is a quote inside single quotes
          continue;
        }
        return i + 1;
      }
    }
    return std::string::npos;
  }
  size_t end = line.size();
  for (size_t i = column; i < line.size(); ++i) {
    if (line[i] == '#' && i > column && (line[i - 1] == ' ' || line[i - 1] == '\t')) {
      end = i;
      break;
    }
  }
  while (end > column && (line[end - 1] == ' ' || line[end - 1] == '\t')) --end;
  return end;
}

// `config set` as an edit of the file's text, so that its comments, order
// and layout stay as the user wrote them (as `git config` does): the value
// replaced where the key is, or the key added to the deepest section that
// exists. nullopt where the file's shape (flow style, a value over several
// lines) asks for rewriting it; the caller checks that the edit means what
// a rewrite would.
std::optional<std::string> editText(const std::string& text, const YAML::Node& root,
                                    std::string_view key, const std::string& spelling) {
  std::vector<std::string> lines = splitLines(text);
  YAML::Node node;
  if (lookup(root, key, &node)) {
    if (!node.IsScalar()) return std::nullopt;
    YAML::Mark mark = node.Mark();
    if (mark.line < 0 || static_cast<size_t>(mark.line) >= lines.size()) return std::nullopt;
    std::string& line = lines[static_cast<size_t>(mark.line)];
    auto column = static_cast<size_t>(mark.column);
    if (column >= line.size()) return std::nullopt;
    size_t end = scalarEnd(line, column);
    if (end == std::string::npos) return std::nullopt;
    line.replace(column, end - column, spelling);
  } else {
    // The deepest section that exists: the new key goes first in it, indented
    // as its first entry.
    std::vector<std::string> parts = splitDots(key);
    YAML::Node section(root);
    size_t depth = 0;
    while (depth + 1 < parts.size()) {
      YAML::Node next;
      if (!child(section, parts[depth], &next)) break;
      if (!next.IsMap() || next.size() == 0 || next.Style() == YAML::EmitterStyle::Flow) {
        return std::nullopt;
      }
      section.reset(next);
      ++depth;
    }
    std::string block;
    size_t insertAt = lines.size();
    size_t indent = 0;
    if (depth > 0) {
      YAML::Mark first = section.begin()->first.Mark();
      if (first.line < 0 || static_cast<size_t>(first.line) >= lines.size()) return std::nullopt;
      insertAt = static_cast<size_t>(first.line);
      indent = static_cast<size_t>(first.column);
      // Above the comment that belongs to that entry.
      while (insertAt > 0) {
        const std::string& above = lines[insertAt - 1];
        size_t at = above.find_first_not_of(' ');
        if (at != indent || above[at] != '#') break;
        --insertAt;
      }
    } else if (root.size() > 0 && root.Style() == YAML::EmitterStyle::Flow) {
      return std::nullopt;
    }
    std::vector<std::string> added;
    for (size_t i = depth; i < parts.size(); ++i) {
      std::string entry = std::string(indent + 2 * (i - depth), ' ') + parts[i] + ":";
      if (i + 1 == parts.size()) entry += " " + spelling;
      added.push_back(entry);
    }
    lines.insert(lines.begin() + static_cast<long>(insertAt), added.begin(), added.end());
  }
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

// What is at a configuration path, its symlinks followed.
enum class FileKind { Missing, Regular, Empty, Unreadable };

// "a FIFO", "a socket", ...: a file that is not read as the configuration.
std::string kindName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "a special file";
}

// /dev/null is an empty configuration (as git reads GIT_CONFIG_GLOBAL=/dev/null).
bool isDevNull(const struct stat& st) {
  return S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
}

// Reads the configuration file (following links): only a regular file is
// read (readRegularFile), and /dev/null is an empty one. `kind` says what was
// found; the Error says why the file cannot be used.
Expected<std::string> readConfigFile(const std::string& path, FileKind* kind) {
  struct stat st {};
  FoundFile found = FoundFile::Missing;
  std::optional<std::string> text = readRegularFile(path, /*followLinks=*/true, &found, &st);
  switch (found) {
    case FoundFile::Regular: *kind = FileKind::Regular; return std::move(*text);
    case FoundFile::Missing: *kind = FileKind::Missing; return std::string();
    case FoundFile::NotRegular:
      if (isDevNull(st)) {
        *kind = FileKind::Empty;
        return std::string();
      }
      *kind = FileKind::Unreadable;
      return Error{path + ": not a regular file (" + kindName(st.st_mode) +
                   "); only a regular file is read as the configuration"};
    case FoundFile::Unreadable: break;
  }
  *kind = FileKind::Unreadable;
  return Error{path + ": " + std::strerror(errno)};
}

// The file's mapping (and, in `text`, what it read). No file (or /dev/null):
// an empty mapping. A file that cannot be read (a directory, a FIFO, no
// permission) is an Error, as a malformed one is.
Expected<YAML::Node> loadYaml(const std::string& path, FileKind* kind,
                              std::string* text = nullptr) {
  TRITONC_TRY(read, readConfigFile(path, kind));
  try {
    YAML::Node root = YAML::Load(read);
    if (text != nullptr) *text = std::move(read);
    if (root.IsNull()) return YAML::Node(YAML::NodeType::Map);
    if (!root.IsMap()) return Error{path + ": the configuration must be a YAML mapping"};
    return root;
  } catch (const YAML::Exception& e) {
    return Error{path + ": " + e.what()};
  }
}

// The configuration a file's mapping means, checked as a compile checks it:
// an unknown key, a value of the wrong type or one that cannot be expanded is
// an Error (the file is then ignored). Messages name `path`.
Expected<Config> configFromYaml(const YAML::Node& root, const std::string& path) {
  Config config;
  try {
    std::vector<std::pair<std::string, std::string>> values = meaning(root);
    for (const auto& [leaf, value] : values) {
      if (findKey(leaf) == nullptr) {
        std::string hint = closestConfigKey(leaf);
        return Error{path + ": unknown key '" + leaf + "'" +
                     (hint.empty() ? "" : " (did you mean '" + hint + "'?)")};
      }
    }
    // A key given twice (a section repeated, or written both flat and nested): YAML 1.2
    // makes a repeated key an error, and readers disagree on which value wins (yaml-cpp
    // the first, PyYAML the last), so the file is not guessed at.
    for (size_t i = 1; i < values.size(); ++i) {
      if (values[i].first == values[i - 1].first) {
        return Error{path + ": " + values[i].first + " is given twice ('" +
                     values[i - 1].second + "' and '" + values[i].second +
                     "'); write it once"};
      }
    }
    for (const ConfigKey& key : configKeys()) {
      YAML::Node node;
      if (!lookup(root, key.name, &node)) continue;
      if (!node.IsScalar()) return Error{path + ": " + key.name + " must be a single value"};
      Expected<std::string> normalized = normalizeValue(key, node.Scalar());
      if (!normalized) return Error{path + ": " + normalized.error().message};
      const std::string& value = *normalized;
      std::string name = key.name;
      if (name == "cache.enabled") {
        config.enabled = value == "true";
      } else if (name == "cache.dir") {
        Expected<std::string> dir = resolveCacheDir(value, path);
        if (!dir) return Error{path + ": cache.dir: " + dir.error().message};
        config.dir = *dir;
      } else if (name == "cache.l2_ir.max_size_mb") {
        config.l2MaxSizeMb = *parseCount(value);
      } else if (name == "cache.l3_code.max_size_mb") {
        config.l3MaxSizeMb = *parseCount(value);
      } else if (name == "cache.l3_code.ttl_days") {
        config.l3TtlDays = *parseCount(value);
      }
    }
  } catch (const YAML::Exception& e) {
    return Error{path + ": " + e.what()};
  }
  return config;
}

}  // namespace

Expected<std::string> checkConfigValue(std::string_view key, std::string_view value) {
  const ConfigKey* known = findKey(key);
  if (known == nullptr) {
    return Error{"unknown configuration key '" + std::string(key) + "'"};
  }
  return normalizeValue(*known, value);
}

std::string closestConfigKey(std::string_view key) {
  // Shares a last component, or differs by a few characters.
  std::string best;
  size_t bestScore = 4;
  for (const ConfigKey& known : configKeys()) {
    std::string_view name = known.name;
    size_t a = key.size(), b = name.size();
    std::vector<size_t> row(b + 1);
    for (size_t j = 0; j <= b; ++j) row[j] = j;
    for (size_t i = 1; i <= a; ++i) {
      size_t prev = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b; ++j) {
        size_t cur = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (key[i - 1] == name[j - 1] ? 0 : 1)});
        prev = cur;
      }
    }
    if (row[b] < bestScore) {
      bestScore = row[b];
      best = known.name;
    }
  }
  return best;
}

std::string configPath() {
  if (const char* env = std::getenv("TRITONC_CONFIG"); env != nullptr && *env != '\0') {
    return env;
  }
  std::string home = homeDirectory();
  return home.empty() ? std::string() : home + "/.config/tritonc/config.yaml";
}

Expected<Config> loadConfig(const std::string& path) {
  if (path.empty() || ::access(path.c_str(), F_OK) != 0) {
    return Config{};  // the common case: no file, no parsing
  }
  FileKind kind = FileKind::Missing;
  TRITONC_TRY(root, loadYaml(path, &kind));
  return configFromYaml(root, path);
}

Expected<std::string> configGet(const std::string& path, std::string_view key,
                                std::string* ignored) {
  const ConfigKey* known = findKey(key);
  if (known == nullptr) {
    return Error{"unknown configuration key '" + std::string(key) + "'"};
  }
  // Nothing at a path that is not a regular file is a configuration (a
  // compile ignores it with a warning); /dev/null is an empty one.
  if (struct stat st {}; !path.empty() && ::stat(path.c_str(), &st) == 0 &&
                         !S_ISREG(st.st_mode) && !isDevNull(st)) {
    return Error{"cannot read the configuration: " + path + " is " + kindName(st.st_mode) +
                 ", not a regular file (compiles ignore it); point TRITONC_CONFIG at a "
                 "regular file"};
  }
  std::string name = known->name;
  // As a compile resolves them: TRITONC_NO_CACHE and TRITONC_CACHE_DIR
  // override the file, and an unset directory is the default one (ccache's
  // --get-config cache_dir does the same).
  if (name == "cache.enabled" || name == "cache.dir") {
    Settings settings = resolveSettings("", false);
    *ignored = settings.configWarning;
    if (name == "cache.dir") return settings.dir;
    return std::string(settings.enabled ? "true" : "false");
  }
  Config config;  // the value in effect: the default when compile ignores the file
  if (Expected<Config> loaded = loadConfig(path)) config = *loaded;
  else *ignored = loaded.error().message;
  if (name == "cache.l2_ir.max_size_mb") return std::to_string(config.l2MaxSizeMb);
  if (name == "cache.l3_code.max_size_mb") return std::to_string(config.l3MaxSizeMb);
  return std::to_string(config.l3TtlDays);
}

Expected<bool> configSet(const std::string& path, std::string_view key, std::string_view value) {
  const ConfigKey* known = findKey(key);
  if (known == nullptr) {
    return Error{"unknown configuration key '" + std::string(key) + "'"};
  }
  if (path.empty()) {
    return Error{"no configuration file: set $TRITONC_CONFIG or $HOME"};
  }
  TRITONC_TRY(normalized, normalizeValue(*known, value));
  // Through a symlink to the file it names, which is replaced atomically
  // next to itself (the link stays a link), as `git config` writes through a
  // symlinked ~/.gitconfig.
  TRITONC_TRY(target, followSymlinks(path));
  std::string name(key);
  // Concurrent sets of other keys (a provisioning script's, in parallel) each
  // read, edit and rename the file: without a lock the last rename drops the
  // others' keys. The folder is locked (flock: released when the process
  // ends, however it ends) for the read-modify-write, as `git config` takes
  // config.lock, but without a file to leave behind.
  size_t slash = target.find_last_of('/');
  std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : target.substr(0, slash);
  if (std::string error; !makeDirectories(folder, &error)) {
    return Error{"cannot create " + folder + ": " + error};
  }
  int lock = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock >= 0) {
    while (::flock(lock, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  struct Unlock {
    int fd;
    ~Unlock() {
      if (fd >= 0) ::close(fd);
    }
  } unlock{lock};
  FileKind fileKind = FileKind::Missing;
  std::string original;
  Expected<YAML::Node> loaded = loadYaml(target, &fileKind, &original);
  if (fileKind == FileKind::Empty) {
    return Error{"cannot set " + name + ": " + target +
                 " is not a regular file (an empty configuration, never written to); point "
                 "TRITONC_CONFIG at a regular file"};
  }
  // A file that compiles ignore stays as it is: a value set in it would
  // never apply (unless the set is what makes it usable again).
  auto ignoredFile = [&](const std::string& why) {
    return Error{"cannot set " + name + ": " + why +
                 "; compiles ignore this file, so no value set in it would apply. Fix or "
                 "remove what is wrong by editing the file (or delete it), then set the value "
                 "again (the file was not changed)"};
  };
  if (!loaded) {
    // Read, but not YAML (or not a mapping); or not read at all (a FIFO, a
    // directory, no permission).
    if (fileKind == FileKind::Regular) return ignoredFile(loaded.error().message);
    return Error{"cannot set " + name + ": " + loaded.error().message};
  }
  bool exists = fileKind == FileKind::Regular;
  YAML::Node root = *loaded;
  Expected<Config> before = configFromYaml(root, target);
  std::string text;
  try {
    // The value as YAML writes it (a path quoted where it must be).
    std::string kind = known->kind;
    YAML::Emitter scalar;
    scalar << normalized;
    std::string spelling = kind == "path" ? std::string(scalar.c_str()) : normalized;
    std::optional<std::string> edited =
        exists ? editText(original, root, key, spelling) : std::nullopt;
    // Another spelling of the key (flat, or half flat) is replaced by the
    // nested one.
    std::vector<std::string> parts = splitDots(key);
    removeParts(root, parts, 0);
    YAML::Node node = root;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      YAML::Node child = node[parts[i]];
      if (!child.IsMap()) {
        node[parts[i]] = YAML::Node(YAML::NodeType::Map);
        child = node[parts[i]];
      }
      node.reset(child);
    }
    if (kind == "bool") node[parts.back()] = normalized == "true";
    else if (kind == "size") node[parts.back()] = std::stoull(normalized);
    else node[parts.back()] = normalized;
    // The edited text where it means what the rewritten file would.
    bool sameMeaning = false;
    if (edited) {
      try {
        sameMeaning = meaning(YAML::Load(*edited)) == meaning(root);
      } catch (const YAML::Exception&) {
        // rewritten below
      }
    }
    if (sameMeaning) {
      text = std::move(*edited);
    } else {
      YAML::Emitter out;
      out << root;
      text = std::string(out.c_str()) + "\n";
    }
  } catch (const YAML::Exception& e) {
    return Error{target + ": " + e.what()};
  }
  Expected<Config> after = Error{""};
  try {
    YAML::Node edited = YAML::Load(text);
    after = configFromYaml(edited.IsNull() ? YAML::Node(YAML::NodeType::Map) : edited, target);
  } catch (const YAML::Exception& e) {
    after = Error{target + ": " + e.what()};
  }
  if (!after) {
    return ignoredFile(before ? after.error().message : before.error().message);
  }
  if (std::string error; !writeFileAtomically(target, text, &error)) {
    return Error{"cannot write " + target + ": " + error};
  }
  return true;
}

Settings resolveSettings(const std::string& flagDir, bool flagNoCache) {
  Settings settings;
  Config config;
  std::string path = configPath();
  if (Expected<Config> loaded = loadConfig(path)) {
    config = *loaded;
  } else {
    settings.configWarning = loaded.error().message;
  }
  const char* noCache = std::getenv("TRITONC_NO_CACHE");
  bool envNoCache = noCache != nullptr && *noCache != '\0' &&
                    parseBool(noCache).value_or(true);  // any other value turns it off too
  if (flagNoCache) {
    settings.enabled = false;
    settings.disabledBy = "--no-cache";
  } else if (envNoCache) {
    settings.enabled = false;
    settings.disabledBy = "TRITONC_NO_CACHE";
  } else if (!config.enabled) {
    settings.enabled = false;
    settings.disabledBy = "cache.enabled in " + path;
  }
  const char* envDir = std::getenv("TRITONC_CACHE_DIR");
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (!flagDir.empty()) {
    settings.dir = flagDir;
    settings.chosenBy = "--cache-dir";
  } else if (envDir != nullptr && *envDir != '\0') {
    settings.dir = envDir;
    settings.chosenBy = "TRITONC_CACHE_DIR";
  } else if (!config.dir.empty()) {
    settings.dir = config.dir;
    settings.chosenBy = "cache.dir in " + path;
  } else if (xdg != nullptr && *xdg == '/') {
    settings.dir = std::string(xdg) + "/tritonc";
  } else if (std::string home = homeDirectory(); !home.empty()) {
    settings.dir = home + "/.cache/tritonc";
  }
  // Saturated: a limit too big for 64 bits of bytes is no limit in practice
  // (wrapping around made 2^44 MiB a limit of 0, "none", and bigger ones small).
  constexpr uint64_t kMiB = 1024 * 1024;
  auto bytes = [](uint64_t mib) {
    return mib > std::numeric_limits<uint64_t>::max() / kMiB ? std::numeric_limits<uint64_t>::max()
                                                              : mib * kMiB;
  };
  settings.maxBytes[static_cast<int>(Level::L2)] = bytes(config.l2MaxSizeMb);
  settings.maxBytes[static_cast<int>(Level::L3)] = bytes(config.l3MaxSizeMb);
  settings.ttlDays[static_cast<int>(Level::L3)] = config.l3TtlDays;
  return settings;
}

}  // namespace tritonc::cache
