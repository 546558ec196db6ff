// What `tensorfs diff` prints: a table for people, JSON Lines or CSV for programs (formats in the README), and the
// exit status that sums it up (0: every paired value equal and nothing unpaired, 1: anything differs).
#pragma once

#include "compare/diff_rows.hpp"

namespace tensorfs::cli {

using compare::DiffReport;

enum class DiffFormat { Table, Json, Csv };

// Prints the report to stdout. `quiet`: the table leaves out the pairs and shows only the summary.
void print_report(const DiffReport& report, DiffFormat format, bool quiet);

int exit_status_of(const DiffReport& report);

}  // namespace tensorfs::cli
