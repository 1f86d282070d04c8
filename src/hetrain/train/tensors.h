// The data set and the model's parameters as torch sees them: views over
// the loaded bytes (no copy), normalisation, and flat parameter vectors.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "hetrain/data/idx.h"

namespace hetrain::train {

struct Tensors {
  torch::Tensor images;  // uint8 [n, 1, rows, cols], a view of the ImageSet's bytes
  torch::Tensor labels;  // int64 [n]
};
// `s` must outlive the images view.
Tensors as_tensors(const data::ImageSet& s);

// uint8 pixels to the float input the models expect (mean 0, deviation 1
// on Fashion-MNIST).
torch::Tensor normalise(const torch::Tensor& u8);

// Every parameter, in module order, as one flat vector and back.
std::vector<float> flatten_parameters(torch::nn::Module& model);
void load_parameters(torch::nn::Module& model, const std::vector<float>& flat);
std::size_t count_parameters(torch::nn::Module& model);

}  // namespace hetrain::train
