// Present only so that cargo honours [build-dependencies] (host feature
// unification, see Cargo.toml).
fn main() {}
