//! dhp-model's integration tests: the exhaustive check at the CI bound.

mod model_check;
mod real_rounds;
