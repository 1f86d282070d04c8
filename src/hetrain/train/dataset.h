// A data set as training sees it, without torch in the header (the command
// line includes it): the samples themselves are behind Examples
// (train/examples.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hetrain::train {

class Examples;

// Everything training needs to know about a data set besides its samples.
struct DataSet {
  DataSet();
  ~DataSet();
  DataSet(DataSet&&) noexcept;
  DataSet& operator=(DataSet&&) noexcept;

  std::unique_ptr<Examples> train, test;   // test: null when there is none
  std::vector<std::int64_t> input_shape;   // per sample, as the model takes it
  std::vector<std::int64_t> target_shape;  // per sample: [] for one label or one value
  bool class_labels = true;                // integer class labels (else float targets)
  std::size_t num_classes = 0;             // class_labels only
  std::string name;                        // for the metrics' "data"

  std::size_t train_size() const;  // training samples
};

}  // namespace hetrain::train
