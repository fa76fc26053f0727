fn main() {
    println!("{}", e2e_twobins::work());
}
