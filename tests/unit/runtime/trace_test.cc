// The per-kernel profile table: kernel names carry their source position, and a long one (an
// absolute path) widens the name column instead of pushing its row's numbers out of line.
#include "ptox/trace.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace ptox {
namespace {

TEST(ProfileTable, ColumnsStayAlignedUnderALongKernelName) {
  const std::string long_name =
      "attention.incore3 (/home/someone/projects/models/qwen/decoder_layer.pto:120:5)";
  std::vector<TaskTrace> trace = {{0, "f.incore0 (a.pto:2:3)", 0, 0.0, 10.0, 100, 100, 10},
                                  {1, long_name, 0, 10.0, 30.0, 100, 100, 10}};
  std::istringstream lines(ProfileTable(trace));
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].rfind(long_name + " ", 0), 0u) << rows[1];  // the slower kernel first
  EXPECT_EQ(rows[2].rfind("f.incore0 (a.pto:2:3) ", 0), 0u) << rows[2];
  // Every row ends its "calls" column where the header's does.
  const size_t calls_end = rows[0].find("calls") + 5;
  for (const std::string& row : rows) {
    ASSERT_GE(row.size(), calls_end) << row;
    EXPECT_EQ(row[calls_end - 1], row == rows[0] ? 's' : '1') << row;
    EXPECT_EQ(row[calls_end], ' ') << row;
  }
}

}  // namespace
}  // namespace ptox
