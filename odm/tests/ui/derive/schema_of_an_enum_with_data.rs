use odm::Schema;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Schema)]
enum Shape {
    Point,
    Circle { radius: f64 },
}

fn main() {}
