// The .npy header parser (format in npy.h). Torch-free and allocation-
// bounded: it is a fuzz target (fuzz/npy_fuzz.cc).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "hetrain/common/error.h"
#include "hetrain/data/npy.h"

namespace hetrain::data {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr std::size_t kPreambleV1 = 10;  // magic, 2 version bytes, u16 header length
constexpr std::size_t kPreambleV2 = 12;  // magic, 2 version bytes, u32 header length
constexpr std::uint8_t kMaxMajorVersion = 3;

// A tiny reader of the header's Python literal: strings, True/False and
// tuples of non-negative integers, which is all numpy writes there.
class Literal {
 public:
  Literal(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  [[noreturn]] void fail(const std::string& problem) const {
    throw DataError(fmt::format("{}: malformed .npy header: {}", path_, problem));
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])) != 0) ++pos_;
  }
  bool eat(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(fmt::format("expected '{}' at byte {}", c, pos_));
  }
  std::string string() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
      fail(fmt::format("expected a quoted string at byte {}", pos_));
    }
    const char quote = text_[pos_++];
    const std::size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string s(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  bool boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair{std::string_view("True"), true}, {"False", false}}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    fail(fmt::format("expected True or False at byte {}", pos_));
  }
  std::size_t integer() {
    skip_space();
    std::size_t v = 0, digits = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])) != 0) {
      const auto d = static_cast<std::size_t>(text_[pos_++] - '0');
      if (v > (std::numeric_limits<std::size_t>::max() - d) / 10) fail("a dimension overflows 64 bits");
      v = v * 10 + d;
      ++digits;
    }
    if (digits == 0) fail(fmt::format("expected a non-negative integer at byte {}", pos_));
    // Python 2 era files may write 1000L.
    if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;
    return v;
  }
  std::vector<std::size_t> tuple() {
    expect('(');
    std::vector<std::size_t> out;
    while (!eat(')')) {
      if (out.size() == kMaxNpyDims) fail(fmt::format("more than {} dimensions", kMaxNpyDims));
      out.push_back(integer());
      if (!eat(',')) {
        expect(')');
        break;
      }
    }
    return out;
  }
  bool at_end() {
    skip_space();
    return pos_ == text_.size();
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
  const std::string& path_;
};

// What the dict says, before it is checked.
struct Fields {
  std::optional<std::string> descr;
  std::optional<bool> fortran;
  std::optional<std::vector<std::size_t>> shape;
};

Fields read_dict(Literal& lit) {
  Fields f;
  lit.expect('{');
  while (!lit.eat('}')) {
    const std::string key = lit.string();
    lit.expect(':');
    if (key == "descr") {
      f.descr = lit.string();
    } else if (key == "fortran_order") {
      f.fortran = lit.boolean();
    } else if (key == "shape") {
      f.shape = lit.tuple();
    } else {
      lit.fail(fmt::format("unexpected key '{}'", key));
    }
    if (!lit.eat(',')) {
      lit.expect('}');
      break;
    }
  }
  if (!lit.at_end()) lit.fail("text after the closing '}'");
  if (!f.descr || !f.fortran || !f.shape) lit.fail("the dict needs 'descr', 'fortran_order' and 'shape'");
  return f;
}

// numpy's names for the dtypes people try, to say what to convert.
std::string descr_meaning(const std::string& descr) {
  if (descr.size() < 2) return descr;
  const std::string_view kind = std::string_view(descr).substr(1);
  if (kind == "f8") return "float64";
  if (kind == "i2" || kind == "i1") return fmt::format("int{}", kind[1] == '2' ? 16 : 8);
  if (kind == "u2" || kind == "u4" || kind == "u8") return fmt::format("uint{}", 8 * (kind[1] - '0'));
  if (kind == "b1") return "bool";
  if (kind == "O") return "object";
  return descr;
}

DType parse_descr(const std::string& descr, const std::string& path) {
  // '<' little-endian, '|' not applicable (one byte), '=' native (x86: little).
  const char order = descr.empty() ? '?' : descr[0];
  const std::string kind = descr.size() > 1 ? descr.substr(1) : "";
  if (order == '>' && kind != "u1") {
    throw DataError(fmt::format("{}: big-endian dtype '{}' is not supported (save with "
                                "arr.astype(arr.dtype.newbyteorder('<')))",
                                path, descr));
  }
  if (order == '<' || order == '|' || order == '=' || order == '>') {
    if (kind == "u1") return DType::kUInt8;
    if (kind == "f2") return DType::kFloat16;
    if (kind == "f4") return DType::kFloat32;
    if (kind == "i4") return DType::kInt32;
    if (kind == "i8") return DType::kInt64;
  }
  throw DataError(fmt::format("{}: unsupported dtype '{}' ({}): inputs must be float32, float16 or uint8, "
                              "targets int64, int32 or float32",
                              path, descr, descr_meaning(descr)));
}

std::uint32_t little_endian(std::span<const std::uint8_t> b) {
  std::uint32_t v = 0;
  for (std::size_t i = b.size(); i > 0; --i) v = (v << 8) | b[i - 1];
  return v;
}

}  // namespace

std::size_t dtype_bytes(DType t) {
  switch (t) {
    case DType::kUInt8: return 1;
    case DType::kFloat16: return 2;
    case DType::kFloat32:
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
  }
  return 1;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kUInt8: return "uint8";
    case DType::kFloat16: return "float16";
    case DType::kFloat32: return "float32";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
  }
  return "?";
}

std::size_t NpyHeader::row_items() const {
  std::size_t n = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

std::string shape_text(std::span<const std::size_t> shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

NpyHeader parse_npy_header(std::span<const std::uint8_t> bytes, const std::string& path) {
  const std::string_view head(reinterpret_cast<const char*>(bytes.data()), std::min(bytes.size(), kMagic.size()));
  if (head != kMagic) {
    throw DataError(fmt::format("{}: not a .npy file (wrong magic: it must start with \\x93NUMPY)", path));
  }
  if (bytes.size() < kPreambleV1) {
    throw DataError(fmt::format("{}: truncated: {} bytes, shorter than a .npy preamble", path, bytes.size()));
  }
  const std::uint8_t major = bytes[kMagic.size()];
  if (major < 1 || major > kMaxMajorVersion) {
    throw DataError(fmt::format("{}: unsupported .npy version {}.{}", path, major, bytes[kMagic.size() + 1]));
  }
  const std::size_t preamble = major == 1 ? kPreambleV1 : kPreambleV2;
  if (bytes.size() < preamble) {
    throw DataError(fmt::format("{}: truncated: {} bytes, shorter than a .npy preamble", path, bytes.size()));
  }
  const std::size_t len_at = kMagic.size() + 2;
  const std::size_t header_len = little_endian(bytes.subspan(len_at, preamble - len_at));
  if (header_len > kMaxNpyHeaderBytes) {
    throw DataError(fmt::format("{}: .npy header of {} bytes is over the limit of {}", path, header_len,
                                kMaxNpyHeaderBytes));
  }
  if (bytes.size() - preamble < header_len) {
    throw DataError(fmt::format("{}: truncated: the header needs {} bytes, the file has {}", path,
                                preamble + header_len, bytes.size()));
  }
  Literal lit(std::string_view(reinterpret_cast<const char*>(bytes.data()) + preamble, header_len), path);
  const Fields f = read_dict(lit);
  if (*f.fortran) {
    throw DataError(fmt::format("{}: Fortran-order array is not supported (save np.ascontiguousarray(arr))", path));
  }
  NpyHeader h;
  h.dtype = parse_descr(*f.descr, path);
  h.shape = *f.shape;
  h.data_offset = preamble + header_len;
  if (h.shape.empty()) throw DataError(fmt::format("{}: a 0-d array (shape ()) has no rows", path));
  // Every byte count must fit 64 bits: a row's (prod(shape[1:]) x itemsize),
  // then the data's (rows x row bytes), each checked on its own because a
  // zero anywhere would hide an overflow in the other.
  std::size_t row = dtype_bytes(h.dtype);
  const std::size_t kMax = std::numeric_limits<std::size_t>::max();
  for (std::size_t i = 1; i < h.shape.size(); ++i) {
    const std::size_t d = h.shape[i];
    if (d != 0 && row > kMax / d) {
      throw DataError(fmt::format("{}: shape {} overflows 64-bit byte counts", path, shape_text(h.shape)));
    }
    row *= d;
  }
  if (row != 0 && h.shape[0] > kMax / row) {
    throw DataError(fmt::format("{}: shape {} overflows 64-bit byte counts", path, shape_text(h.shape)));
  }
  return h;
}

}  // namespace hetrain::data
