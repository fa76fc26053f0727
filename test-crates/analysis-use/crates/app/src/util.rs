pub fn work() {
    use crate::nested::child::go as again;
    local();
    if false {
        again();
    }
}

fn local() {
    // Names from outside the workspace, explicit and by glob: calls that leave the workspace, not unresolved.
    use std::cmp::*;
    use std::mem::swap;
    let (mut a, mut b) = (1, 2);
    swap(&mut a, &mut b);
    let _ = max(a, b);
}
