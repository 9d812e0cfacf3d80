//! BSON's element types, by the type byte that starts each element: named once, below both the
//! decoder that reads them (`decode`) and the element walker that reads and writes them (`raw`).

pub(crate) const DOUBLE: u8 = 0x01;
pub(crate) const STRING: u8 = 0x02;
pub(crate) const DOCUMENT: u8 = 0x03;
pub(crate) const ARRAY: u8 = 0x04;
pub(crate) const OBJECT_ID: u8 = 0x07;
pub(crate) const BOOLEAN: u8 = 0x08;
pub(crate) const DATE_TIME: u8 = 0x09;
pub(crate) const NULL: u8 = 0x0A;
pub(crate) const INT32: u8 = 0x10;
pub(crate) const INT64: u8 = 0x12;
