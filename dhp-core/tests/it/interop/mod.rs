//! Stores, logs and bundles read and written by the reference package, both ways.

mod indexed_store_reference;
mod logs_bundles;
mod store_py_to_rs;
mod store_rs_to_py;
