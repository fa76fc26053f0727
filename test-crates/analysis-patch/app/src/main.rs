fn main() {
    let tokens = calltime_vendored::lex("a b c");
    println!("{}", tokens.len() + calltime_vendored::Source::new("x").count());
}
