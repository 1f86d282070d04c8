// The .npy reader on files written by NumPy (tests/data/make_npy_fixtures.py,
// run by CTest first as the npy_fixtures fixture): shapes, dtypes and rows
// read back, and every bad file refused with a one-line DataError naming it.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "hetrain/common/error.h"
#include "hetrain/data/npy.h"

namespace hetrain::data {
namespace {

std::string fx(const std::string& name) { return std::string(HETRAIN_NPY_FIXTURES) + "/" + name; }

// The DataError's message, or "" when none was thrown.
template <typename F>
std::string data_error(F&& f) {
  try {
    f();
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    return e.what();
  }
  return "";
}

#define EXPECT_DATA_ERROR(expr, file, text)                  \
  do {                                                        \
    const std::string m = data_error([&] { (void)(expr); }); \
    EXPECT_NE(m.find(file), std::string::npos) << m;          \
    EXPECT_NE(m.find(text), std::string::npos) << m;          \
  } while (0)

TEST(Npy, ReadsEveryDtypeAndShape) {
  const NpyArray u8(fx("small/u8.npy"));
  EXPECT_EQ(u8.header().dtype, DType::kUInt8);
  EXPECT_EQ(u8.header().shape, (std::vector<std::size_t>{4, 2, 3}));
  EXPECT_EQ(u8.row_bytes(), 6u);
  EXPECT_EQ(u8.row(3)[5], 23);
  const NpyArray f16(fx("small/f16.npy"));
  EXPECT_EQ(f16.header().dtype, DType::kFloat16);
  EXPECT_EQ(f16.row_bytes(), 4u);
  const NpyArray f32(fx("small/f32.npy"));
  float v = 0;
  std::memcpy(&v, f32.row(2) + sizeof(float), sizeof v);
  EXPECT_EQ(v, 5.0f);
  const NpyArray i32(fx("small/i32.npy"));
  EXPECT_EQ(i32.header().dtype, DType::kInt32);
  EXPECT_EQ(i32.rows(), 3u);
  const NpyArray i64(fx("small/i64.npy"));
  std::int64_t l = 0;
  std::memcpy(&l, i64.row(1), sizeof l);
  EXPECT_EQ(l, 9);
  const NpyArray vec(fx("small/vector.npy"));
  EXPECT_EQ(vec.header().shape, (std::vector<std::size_t>{7}));
  EXPECT_EQ(vec.row_bytes(), 4u);
  EXPECT_TRUE(vec.row_shape().empty());
}

TEST(Npy, ReadsFormatVersion2) {
  const NpyArray a(fx("small/v2.npy"));
  EXPECT_EQ(a.header().shape, (std::vector<std::size_t>{5, 2}));
  float v = 0;
  std::memcpy(&v, a.row(4), sizeof v);
  EXPECT_EQ(v, 8.0f);
}

TEST(Npy, GathersRowsInTheOrderAsked) {
  const NpyArray u8(fx("small/u8.npy"));
  const std::vector<std::uint32_t> ids{2, 0, 2};
  std::vector<std::uint8_t> out(ids.size() * u8.row_bytes());
  u8.gather(ids, out.data());
  EXPECT_EQ(out[0], 12);
  EXPECT_EQ(out[6], 0);
  EXPECT_EQ(out[17], 17);
  std::vector<std::uint8_t> block(2 * u8.row_bytes());
  u8.copy_rows(1, 2, block.data());
  EXPECT_EQ(block[0], 6);
  EXPECT_EQ(block[11], 17);
}

TEST(Npy, OpensATableAndCountsClasses) {
  const NpyData cls = open_npy_dir(fx("cls"));
  EXPECT_TRUE(cls.class_labels);
  EXPECT_EQ(cls.num_classes, 4u);
  EXPECT_EQ(cls.train.x.rows(), 400u);
  ASSERT_NE(cls.test, nullptr);
  EXPECT_EQ(cls.test->y.rows(), 100u);
  const NpyData reg = open_npy_dir(fx("reg"));
  EXPECT_FALSE(reg.class_labels);
  const NpyData multi = open_npy_dir(fx("multi"));
  EXPECT_EQ(multi.test, nullptr);
  EXPECT_EQ(multi.train.y.row_shape(), (std::vector<std::size_t>{3}));
  EXPECT_TRUE(is_npy_dir(fx("reg")));
  EXPECT_FALSE(is_npy_dir(fx("small")));
}

// One test per row of docs/errors.md's .npy table (the CLI test checks the
// same files through the real binary).
TEST(NpyBad, Truncated) { EXPECT_DATA_ERROR(NpyArray(fx("bad/truncated.npy")), "truncated.npy", "truncated"); }
TEST(NpyBad, WrongMagic) { EXPECT_DATA_ERROR(NpyArray(fx("bad/magic.npy")), "magic.npy", "wrong magic"); }
TEST(NpyBad, FortranOrder) { EXPECT_DATA_ERROR(NpyArray(fx("bad/fortran.npy")), "fortran.npy", "Fortran"); }
TEST(NpyBad, UnsupportedDtype) {
  EXPECT_DATA_ERROR(NpyArray(fx("bad/float64.npy")), "float64.npy", "unsupported dtype '<f8' (float64)");
}
TEST(NpyBad, BigEndian) { EXPECT_DATA_ERROR(NpyArray(fx("bad/bigendian.npy")), "bigendian.npy", "big-endian"); }
TEST(NpyBad, HeaderLiesAboutShape) {
  EXPECT_DATA_ERROR(NpyArray(fx("bad/lying.npy")), "lying.npy", "header does not match the data");
}
TEST(NpyBad, UnknownVersion) {
  EXPECT_DATA_ERROR(NpyArray(fx("bad/version9.npy")), "version9.npy", "unsupported .npy version 9");
}
TEST(NpyBad, RowCountsDiffer) {
  EXPECT_DATA_ERROR(open_npy(fx("bad/x100.npy"), fx("bad/y99.npy")), "y99.npy", "has 100 rows but");
}
TEST(NpyBad, NegativeLabel) {
  EXPECT_DATA_ERROR(open_npy(fx("bad/x100.npy"), fx("bad/negative.npy")), "negative.npy",
                    "label -1 at row 7 is out of range");
}
TEST(NpyBad, TestLabelBeyondTrainingClasses) {
  EXPECT_DATA_ERROR(open_npy(fx("bad/x100.npy"), fx("bad/labels.npy"), fx("bad/x100.npy"), fx("bad/test_y_big.npy")),
                    "test_y_big.npy", "at row 5 is out of range (the training labels have 3 classes");
}
TEST(NpyBad, InputsOfALabelType) {
  EXPECT_DATA_ERROR(open_npy(fx("bad/labels.npy"), fx("bad/labels.npy")), "labels.npy", "inputs of dtype int64");
}
TEST(NpyBad, TestPairIncomplete) { EXPECT_DATA_ERROR(open_npy_dir(fx("bad/half")), "half", "test_y.npy"); }
TEST(NpyBad, MissingFile) { EXPECT_DATA_ERROR(NpyArray(fx("bad/nope.npy")), "nope.npy", "cannot open"); }
TEST(NpyBad, NoRowsOr0d) {
  EXPECT_DATA_ERROR(NpyArray(fx("small/empty.npy")), "empty.npy", "no rows");
  EXPECT_DATA_ERROR(NpyArray(fx("small/scalar.npy")), "scalar.npy", "0-d array");
}

// The parser on its own: damaged headers are errors, never crashes.
TEST(NpyHeader, RejectsMalformedText) {
  auto header = [](const std::string& dict) {
    std::string b = "\x93NUMPY";
    b += '\x01';
    b += '\x00';
    b += static_cast<char>(dict.size() & 0xff);
    b += static_cast<char>(dict.size() >> 8);
    b += dict;
    return parse_npy_header(std::span(reinterpret_cast<const std::uint8_t*>(b.data()), b.size()), "h.npy");
  };
  EXPECT_EQ(header("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }\n").shape,
            (std::vector<std::size_t>{3, 4}));
  EXPECT_DATA_ERROR(header("{'descr': '<f4', 'shape': (3,)}"), "h.npy", "needs 'descr'");
  EXPECT_DATA_ERROR(header("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4}"), "h.npy", "malformed");
  EXPECT_DATA_ERROR(header("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (3,)}"), "h.npy", "True or False");
  EXPECT_DATA_ERROR(header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}"), "h.npy",
                    "overflows");
  EXPECT_DATA_ERROR(header("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 2)}"),
                    "h.npy", "unsupported dtype");
  EXPECT_DATA_ERROR(header("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 2)}"),
                    "h.npy", "overflows 64-bit");
  EXPECT_DATA_ERROR(header("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4294967296, 4294967296)}"),
                    "h.npy", "overflows 64-bit");
  EXPECT_EQ(shape_text(std::vector<std::size_t>{5}), "(5,)");
}

}  // namespace
}  // namespace hetrain::data
