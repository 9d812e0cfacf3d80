use odm::Embedded;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
#[odm(hooks)]
struct Address {
    city: String,
}

fn main() {}
