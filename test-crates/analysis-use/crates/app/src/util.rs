pub fn work() {
    use crate::nested::child::go as again;
    local();
    if false {
        again();
    }
}

fn local() {}
