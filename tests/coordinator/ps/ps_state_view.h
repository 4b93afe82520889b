// Reads a VariableStore's exported state back into plain maps (values, slots and steps of every
// variable and row), so that tests can check optimizer slots and compare two stores exactly,
// independently of the order in which rows happen to be exported.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "coordinator/ps/variable_store.h"

namespace tj::testing {

struct DenseStateView {
  int64_t step = 0;
  std::vector<std::vector<float>> arrays;  // [0]: values, [k]: optimizer slot k
  bool operator==(const DenseStateView&) const = default;
};

struct RowStateView {
  std::vector<float> data;  // dim values, then dim per slot
  int64_t step = 0;
  bool operator==(const RowStateView&) const = default;
};

struct StoreStateView {
  std::map<std::string, DenseStateView> variables;
  std::map<std::string, std::map<int64_t, RowStateView>> tables;
  std::map<std::string, std::string> table_specs;  // serialized TableSpec
  bool operator==(const StoreStateView&) const = default;
};

inline std::vector<std::string> ExportRecords(const VariableStore& store) {
  std::vector<std::string> records;
  const absl::Status status = store.ExportState([&](std::span<const std::string_view> pieces) {
    std::string& record = records.emplace_back();
    for (std::string_view piece : pieces) record.append(piece);
    return absl::OkStatus();
  });
  EXPECT_TRUE(status.ok()) << status;
  return records;
}

inline RecordSource SourceOf(const std::vector<std::string>& records) {
  auto next = std::make_shared<size_t>(0);
  return [&records, next](std::string& record) -> absl::StatusOr<bool> {
    if (*next == records.size()) return false;
    record = records[(*next)++];
    return true;
  };
}

template <typename T>
std::vector<T> Unpack(const std::string& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

inline StoreStateView ViewOf(const VariableStore& store) {
  StoreStateView view;
  DenseStateView* variable = nullptr;
  std::map<int64_t, RowStateView>* table = nullptr;
  size_t row_floats = 0;
  for (const std::string& bytes : ExportRecords(store)) {
    v1::StateRecord record;
    EXPECT_TRUE(record.ParseFromString(bytes));
    if (record.has_variable()) {
      variable = &view.variables[record.variable().spec().name()];
      variable->step = record.variable().step();
    } else if (record.has_dense_chunk()) {
      const auto& chunk = record.dense_chunk();
      if (variable->arrays.size() <= static_cast<size_t>(chunk.slot())) {
        variable->arrays.resize(static_cast<size_t>(chunk.slot()) + 1);
      }
      std::vector<float> floats = Unpack<float>(chunk.data());
      auto& array = variable->arrays[static_cast<size_t>(chunk.slot())];
      array.insert(array.end(), floats.begin(), floats.end());
    } else if (record.has_table()) {
      const v1::TableSpec& spec = record.table().spec();
      table = &view.tables[spec.name()];
      view.table_specs[spec.name()] = spec.SerializeAsString();
      int slots = spec.optimizer().has_adam() ? 2 : spec.optimizer().has_adagrad() ? 1 : 0;
      row_floats = static_cast<size_t>(spec.dim()) * static_cast<size_t>(1 + slots);
    } else if (record.has_rows()) {
      std::vector<int64_t> ids = Unpack<int64_t>(record.rows().ids());
      std::vector<float> data = Unpack<float>(record.rows().data());
      std::vector<int64_t> steps = Unpack<int64_t>(record.rows().steps());
      for (size_t i = 0; i < ids.size(); ++i) {
        RowStateView& row = (*table)[ids[i]];
        row.data.assign(data.begin() + static_cast<std::ptrdiff_t>(i * row_floats),
                        data.begin() + static_cast<std::ptrdiff_t>((i + 1) * row_floats));
        row.step = steps.empty() ? 0 : steps[i];
      }
    }
  }
  return view;
}

}  // namespace tj::testing
