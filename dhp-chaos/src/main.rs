fn main() { println!("not yet built"); }
