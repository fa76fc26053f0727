fn main() {
    println!("{}", e2e_broken::entry());
}
