//===- CacheKeys.cpp - what the compile cache's keys cover ------------------===//
//
// Every field that changes what a level stores is in its key, with a name
// and a length (KeyBuilder), so adding a field never aliases old keys.
// docs/cache.md lists them; tests/unit/CacheTest.cpp checks that each one
// changes the key and that the input's path does not.
//
//===----------------------------------------------------------------------===//
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstring>

#include "tritonc/base/Version.h"
#include "tritonc/driver/Driver.h"

namespace tritonc {

const std::string& compilerIdentity() {
  static const std::string identity = [] {
    std::string text = std::string(kVersion) + " " + kBuildId;
    struct stat st {};
    if (::stat("/proc/self/exe", &st) == 0) {
      text += " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
              std::to_string(st.st_mtim.tv_nsec);
    }
    return text;
  }();
  return identity;
}

cache::Key checkedIRKey(const CompileOptions& options, std::string_view source,
                        std::string_view identity) {
  cache::KeyBuilder key("l2");
  key.add("compiler", identity)
      .add("source", source)
      // -O0 generates run-time shape checks; the other levels share their IR.
      .add("shape-checks", options.optLevel == '0' ? "1" : "0")
      .add("entry", options.entry);
  return key.finish();
}

cache::Key generatedCodeKey(const CompileOptions& options, std::string_view source,
                            std::string_view identity, std::string_view nvcc) {
  cache::KeyBuilder key("l3");
  key.add("compiler", identity)
      .add("source", source)
      .add("opt", std::string(1, options.optLevel))
      .add("target", options.target)
      .add("entry", options.entry);
  if (options.target != "pytorch") {
    std::string dtypes, archs;
    for (const std::string& d : options.cudaDTypes) dtypes += d + ",";
    for (const std::string& a : options.cudaArchs) archs += a + ",";
    key.add("cuda-dtypes", dtypes).add("cuda-archs", archs).add("nvcc", nvcc);
  }
  return key.finish();
}

// ---- diagnostics ------------------------------------------------------------------------
// u32 count; per diagnostic: u16 kind, u8 severity, u8 located, u32 begin,
// u32 end, path, message, u32 notes; per note: u8 located, u32 begin, u32 end,
// message. Strings are u32 length + bytes.

namespace {

template <typename T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void putString(std::string& out, std::string_view text) {
  put<uint32_t>(out, static_cast<uint32_t>(text.size()));
  out.append(text);
}

struct Cursor {
  std::string_view bytes;
  size_t pos = 0;
  bool failed = false;
  template <typename T>
  T get() {
    T value{};
    if (bytes.size() - pos < sizeof(T)) {
      failed = true;
      return value;
    }
    std::memcpy(&value, bytes.data() + pos, sizeof(T));
    pos += sizeof(T);
    return value;
  }
  std::string getString() {
    uint32_t n = get<uint32_t>();
    if (failed || bytes.size() - pos < n) {
      failed = true;
      return {};
    }
    std::string text(bytes.substr(pos, n));
    pos += n;
    return text;
  }
};

}  // namespace

std::string encodeDiagnostics(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  put<uint32_t>(out, static_cast<uint32_t>(diagnostics.size()));
  for (const Diagnostic& d : diagnostics) {
    put<uint16_t>(out, static_cast<uint16_t>(d.kind));
    put<uint8_t>(out, static_cast<uint8_t>(d.severity));
    put<uint8_t>(out, d.source != nullptr ? 1 : 0);
    put<uint32_t>(out, d.range.begin);
    put<uint32_t>(out, d.range.end);
    putString(out, d.path);
    putString(out, d.message);
    put<uint32_t>(out, static_cast<uint32_t>(d.notes.size()));
    for (const DiagnosticNote& n : d.notes) {
      put<uint8_t>(out, n.source != nullptr ? 1 : 0);
      put<uint32_t>(out, n.range.begin);
      put<uint32_t>(out, n.range.end);
      putString(out, n.message);
    }
  }
  return out;
}

Expected<std::vector<Diagnostic>> decodeDiagnostics(std::string_view bytes,
                                                    const SourceBuffer& source) {
  Cursor c{bytes};
  std::vector<Diagnostic> diagnostics;
  uint32_t count = c.get<uint32_t>();
  auto rangeOk = [&](SourceRange r) { return r.begin <= r.end && r.end <= source.text().size(); };
  for (uint32_t i = 0; i < count && !c.failed; ++i) {
    Diagnostic d;
    auto kind = c.get<uint16_t>();
    auto severity = c.get<uint8_t>();
    bool located = c.get<uint8_t>() != 0;
    d.range.begin = c.get<uint32_t>();
    d.range.end = c.get<uint32_t>();
    d.path = c.getString();
    d.message = c.getString();
    if (kind >= diagKindCount() || severity > static_cast<uint8_t>(Severity::Error) ||
        (located && !rangeOk(d.range))) {
      c.failed = true;
      break;
    }
    d.kind = static_cast<Diag>(kind);
    d.severity = static_cast<Severity>(severity);
    d.source = located ? &source : nullptr;
    uint32_t notes = c.get<uint32_t>();
    for (uint32_t j = 0; j < notes && !c.failed; ++j) {
      DiagnosticNote n;
      bool noteLocated = c.get<uint8_t>() != 0;
      n.range.begin = c.get<uint32_t>();
      n.range.end = c.get<uint32_t>();
      n.message = c.getString();
      if (noteLocated && !rangeOk(n.range)) c.failed = true;
      n.source = noteLocated ? &source : nullptr;
      d.notes.push_back(std::move(n));
    }
    diagnostics.push_back(std::move(d));
  }
  if (c.failed || c.pos != bytes.size()) {
    return Error{"malformed diagnostics"};
  }
  return diagnostics;
}

}  // namespace tritonc
