pub mod child;

use crate::util::*;

fn parent_helper() {
    work();
}
