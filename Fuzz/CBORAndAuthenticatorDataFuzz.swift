// libFuzzer entry point for the App Attest parsers that take raw bytes from the network: the CBOR
// decoder and the authenticator data parser. Built and run by Fuzz/run (not part of the package:
// it is compiled together with the parser sources, instrumented).

import CBOR

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    if let value = try? CBORDecoder().decode(bytes) {
        // Walk what was decoded, as the verifier would.
        _ = describe(value)
    }
    _ = try? AuthenticatorData(bytes, requireAttestedCredential: true)
    _ = try? AuthenticatorData(bytes, requireAttestedCredential: false)
    return 0
}

private func describe(_ value: CBORValue) -> Int {
    switch value {
    case .map(let entries): return entries.reduce(1) { $0 + describe($1.key) + describe($1.value) }
    case .array(let items): return items.reduce(1) { $0 + describe($1) }
    default: return 1
    }
}
