//! Messages from the network: any bytes as one message through the server's parser
//! (`odm_server::wire`). Never a panic; a message that parses is read back the same after the
//! server's own encoder writes its command again (as one body, compressed the same way).
//!
//! The input's first byte steers the rest toward messages the parser accepts: bit 0 sets the
//! header's length to the bytes that follow, bit 1 writes a correct `OP_MSG` checksum.
#![no_main]

use libfuzzer_sys::fuzz_target;
use odm_server::wire::{self, HEADER_LEN, Header, RequestKind};

fuzz_target!(|data: &[u8]| {
    let Some((&steer, message)) = data.split_first() else {
        return;
    };
    if message.len() < HEADER_LEN + 4 {
        return;
    }
    let mut message = message.to_vec();
    if steer & 1 != 0 {
        let length = message.len() as i32;
        message[..4].copy_from_slice(&length.to_le_bytes());
    }
    let op_code = i32::from_le_bytes(message[12..16].try_into().expect("4 bytes"));
    let flags_at = HEADER_LEN;
    let flags = u32::from_le_bytes(message[flags_at..flags_at + 4].try_into().expect("4 bytes"));
    // Room for the flags after the old checksum is cut off.
    let room = message.len() >= HEADER_LEN + 8;
    if steer & 2 != 0 && room && op_code == wire::OP_MSG && flags & wire::CHECKSUM_PRESENT != 0 {
        message.truncate(message.len() - 4);
        message[flags_at..flags_at + 4]
            .copy_from_slice(&(flags & !wire::CHECKSUM_PRESENT).to_le_bytes());
        wire::add_checksum(&mut message);
    }
    let head: [u8; HEADER_LEN] = message[..HEADER_LEN].try_into().expect("16 bytes");
    let Ok(header) = Header::parse(&head) else {
        return;
    };
    let Ok(request) = wire::parse(&header, &message[HEADER_LEN..]) else {
        return;
    };
    let RequestKind::Msg { flags, command } = &request.kind else {
        return;
    };
    let body = bson::RawDocumentBuf::try_from(command).expect("a parsed command encodes again");
    if body.as_bytes().len() > wire::MAX_COMMAND_SIZE {
        // Document sequences merged into the body may pass the one-document limit.
        return;
    }
    let flags = flags & !wire::CHECKSUM_PRESENT;
    let again = wire::encode_msg(header.request_id, 0, &body, flags, request.compressor);
    let head: [u8; HEADER_LEN] = again[..HEADER_LEN].try_into().expect("16 bytes");
    let header = Header::parse(&head).expect("an encoded header reads back");
    let back = wire::parse(&header, &again[HEADER_LEN..]).expect("an encoded message reads back");
    let RequestKind::Msg {
        flags: flags_back,
        command: command_back,
    } = &back.kind
    else {
        panic!("an OP_MSG read back as another kind");
    };
    assert_eq!(*flags_back, flags);
    // Compared as bytes: `==` on documents holding NaN is false.
    let bytes_back = bson::RawDocumentBuf::try_from(command_back).expect("encodes");
    assert_eq!(bytes_back.as_bytes(), body.as_bytes());
});
