pub fn grandchild() {}
