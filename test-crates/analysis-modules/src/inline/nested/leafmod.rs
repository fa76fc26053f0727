pub fn nested_leaf() {}
