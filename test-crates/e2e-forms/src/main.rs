fn main() {
    for line in e2e_forms::run_all() {
        println!("{line}");
    }
}
