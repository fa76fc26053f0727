fn main() {
    std::process::exit(cargo_calltime::main());
}
