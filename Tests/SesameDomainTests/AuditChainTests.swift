import SesameDomain
import SesameJSON
import Testing

@Suite("Audit chain")
struct AuditChainTests {
    static func link(_ id: Int64, action: String = "config.upload", details: [String: JSONValue] = ["bytes": .integer(42)]) -> AuditChain.Link {
        AuditChain.Link(
            appID: "TEAMID1234.com.example.app", id: id, atMicroseconds: 1_800_000_000_000_000 + id, actor: "key:ci", action: action,
            pattern: "2.*", revision: id, details: details)
    }

    /// Links 1…count with their stored hashes, as `AuditLog.append` writes them.
    static func chain(_ count: Int) throws -> [(link: AuditChain.Link, previous: [UInt8], hash: [UInt8])] {
        var previous = AuditChain.genesis
        return try (1...Int64(count)).map { id in
            let link = link(id)
            let hash = try AuditChain.hash(of: link, following: previous)
            defer { previous = hash }
            return (link, previous, hash)
        }
    }

    static func verify(_ entries: [(link: AuditChain.Link, previous: [UInt8]?, hash: [UInt8]?)], expectedHead: [UInt8]? = nil) -> AuditChain.Verifier {
        var verifier = AuditChain.Verifier(expectedHead: expectedHead)
        for entry in entries { verifier.check(entry.link, previousHash: entry.previous, entryHash: entry.hash) }
        return verifier
    }

    @Test("every field of an entry, and the entry before it, changes its hash")
    func everyFieldCounts() throws {
        let base = Self.link(7)
        let hash = try AuditChain.hash(of: base, following: AuditChain.genesis)
        #expect(hash.count == 32)
        #expect(try AuditChain.hash(of: base, following: AuditChain.genesis) == hash)
        let variants = [
            AuditChain.Link(appID: "OTHER.app", id: 7, atMicroseconds: base.atMicroseconds, actor: "key:ci", action: base.action, pattern: "2.*", revision: 7, details: base.details),
            AuditChain.Link(appID: base.appID, id: 8, atMicroseconds: base.atMicroseconds, actor: "key:ci", action: base.action, pattern: "2.*", revision: 7, details: base.details),
            AuditChain.Link(appID: base.appID, id: 7, atMicroseconds: base.atMicroseconds + 1, actor: "key:ci", action: base.action, pattern: "2.*", revision: 7, details: base.details),
            AuditChain.Link(appID: base.appID, id: 7, atMicroseconds: base.atMicroseconds, actor: "operator", action: base.action, pattern: "2.*", revision: 7, details: base.details),
            AuditChain.Link(appID: base.appID, id: 7, atMicroseconds: base.atMicroseconds, actor: "key:ci", action: "config.delete", pattern: "2.*", revision: 7, details: base.details),
            AuditChain.Link(appID: base.appID, id: 7, atMicroseconds: base.atMicroseconds, actor: "key:ci", action: base.action, pattern: nil, revision: 7, details: base.details),
            AuditChain.Link(appID: base.appID, id: 7, atMicroseconds: base.atMicroseconds, actor: "key:ci", action: base.action, pattern: "2.*", revision: nil, details: base.details),
            AuditChain.Link(appID: base.appID, id: 7, atMicroseconds: base.atMicroseconds, actor: "key:ci", action: base.action, pattern: "2.*", revision: 7, details: ["bytes": .integer(43)]),
        ]
        var hashes: Set<[UInt8]> = [hash]
        for variant in variants { hashes.insert(try AuditChain.hash(of: variant, following: AuditChain.genesis)) }
        hashes.insert(try AuditChain.hash(of: base, following: [UInt8](repeating: 1, count: 32)))
        #expect(hashes.count == variants.count + 2)
    }

    @Test("fields are length-prefixed: moving bytes between actor and action changes the hash")
    func lengthPrefixed() throws {
        let one = AuditChain.Link(appID: "A", id: 1, atMicroseconds: 0, actor: "ab", action: "c", pattern: nil, revision: nil, details: [:])
        let two = AuditChain.Link(appID: "A", id: 1, atMicroseconds: 0, actor: "a", action: "bc", pattern: nil, revision: nil, details: [:])
        let emptyPattern = AuditChain.Link(appID: "A", id: 1, atMicroseconds: 0, actor: "ab", action: "c", pattern: "", revision: nil, details: [:])
        #expect(try AuditChain.hash(of: one, following: AuditChain.genesis) != AuditChain.hash(of: two, following: AuditChain.genesis))
        #expect(try AuditChain.hash(of: one, following: AuditChain.genesis) != AuditChain.hash(of: emptyPattern, following: AuditChain.genesis))
    }

    @Test("details hash the same whatever order their keys come in")
    func canonicalDetails() throws {
        let details: [String: JSONValue] = ["z": .string("a/b"), "a": .object(["y": .integer(1), "b": .array([.bool(true), .null])]), "n": .number(0.5)]
        let text = String(decoding: try AuditChain.canonicalDetails(details), as: UTF8.self)
        #expect(text == #"{"a":{"b":[true,null],"y":1},"n":0.5,"z":"a/b"}"#)
    }

    @Test("details JSON cannot carry (a number that is not finite) are an error, never hashed or stored as {}")
    func unencodableDetails() throws {
        let infinite = Self.link(1, details: ["ratio": .number(.infinity)])
        #expect(throws: AuditChain.UnencodableDetails.self) { try AuditChain.canonicalDetails(infinite.details) }
        #expect(throws: AuditChain.UnencodableDetails.self) { try AuditChain.hash(of: infinite, following: AuditChain.genesis) }
        // Read back with such details (they cannot be, from PostgreSQL's jsonb; a defect elsewhere), the chain says so.
        let stored = try AuditChain.hash(of: Self.link(1, details: [:]), following: AuditChain.genesis)
        let verifier = Self.verify([(infinite, AuditChain.genesis, stored)])
        #expect(verifier.broken?.reason.contains("cannot be written as JSON") == true)
    }

    @Test("an untouched chain is intact and reports its head")
    func intact() throws {
        let entries = try Self.chain(5)
        let verifier = Self.verify(entries.map { ($0.link, $0.previous, $0.hash) })
        #expect(verifier.broken == nil && verifier.entries == 5 && verifier.predating == 0)
        #expect(verifier.head?.id == 5 && verifier.head?.hash == entries[4].hash)
    }

    @Test("an entry changed after it was written breaks the chain there")
    func changedEntry() throws {
        var entries = try Self.chain(5).map { ($0.link, Optional($0.previous), Optional($0.hash)) }
        entries[2].0 = Self.link(3, details: ["bytes": .integer(9000)])
        let verifier = Self.verify(entries)
        #expect(verifier.broken?.id == 3 && verifier.broken?.reason.contains("changed") == true)
        #expect(verifier.head?.id == 2)
    }

    @Test("a changed entry whose hash is recomputed breaks the chain at the next entry")
    func rehashedEntry() throws {
        var entries = try Self.chain(5).map { ($0.link, Optional($0.previous), Optional($0.hash)) }
        entries[2].0 = Self.link(3, action: "config.delete")
        entries[2].2 = try AuditChain.hash(of: entries[2].0, following: entries[1].2!)
        #expect(Self.verify(entries).broken?.id == 4)
    }

    @Test("a removed entry breaks the chain at the one after it")
    func removedEntry() throws {
        var entries = try Self.chain(5).map { ($0.link, Optional($0.previous), Optional($0.hash)) }
        entries.remove(at: 1)
        let verifier = Self.verify(entries)
        #expect(verifier.broken?.id == 3 && verifier.broken?.reason.contains("does not follow entry 1") == true)
    }

    @Test("entries before the chain began are counted apart; a hash stripped after it began breaks it")
    func predating() throws {
        let chained = try Self.chain(3).map { ($0.link, Optional($0.previous), Optional($0.hash)) }
        let old: [(AuditChain.Link, [UInt8]?, [UInt8]?)] = [(Self.link(-2), nil, nil), (Self.link(-1), nil, nil)]
        let verifier = Self.verify(old + chained)
        #expect(verifier.broken == nil && verifier.predating == 2 && verifier.entries == 5 && verifier.head?.id == 3)

        var stripped = chained
        stripped[1] = (stripped[1].0, nil, nil)
        #expect(Self.verify(stripped).broken?.id == 2)

        // Stripping the first chained entries to pass them off as older ones: the next does not start the chain.
        let passedOff = [(chained[0].0, nil, nil)] + chained.dropFirst()
        #expect(Self.verify(passedOff).broken?.id == 2)
    }

    @Test("a head exported earlier is reached by the intact chain, and not once the newest entries are cut")
    func exportedHead() throws {
        let entries = try Self.chain(5).map { ($0.link, Optional($0.previous), Optional($0.hash)) }
        let head = entries[4].2!
        #expect(Self.verify(entries, expectedHead: head).reachedExpectedHead)
        #expect(Self.verify(entries, expectedHead: entries[2].2!).reachedExpectedHead)
        let cut = Array(entries.prefix(4))
        let verifier = Self.verify(cut, expectedHead: head)
        #expect(verifier.broken == nil && !verifier.reachedExpectedHead)
    }

    @Test("hex decodes either case and refuses anything else")
    func hex() throws {
        #expect(Hex.decode("00ffA1") == [0, 255, 161])
        #expect(Hex.decode(Hex.encode([1, 2, 254])) == [1, 2, 254])
        #expect(Hex.decode("abc") == nil && Hex.decode("zz") == nil && Hex.decode("") == [])
    }

    @Test("version 2 hashes the details as RFC 8785 JSON: members ordered by UTF-16, numbers as ECMAScript writes them")
    func jcsDetails() throws {
        let details: [String: JSONValue] = ["é": .string("x"), "b": .integer(1), "a": .number(1e21), "c": .array([.number(0.1), .null, .bool(true)])]
        #expect(String(decoding: try AuditChain.jcsDetails(details), as: UTF8.self) == #"{"a":1e+21,"b":1,"c":[0.1,null,true],"é":"x"}"#)
        // An integer and the same number as a double are one value in JSON, and hash the same.
        #expect(try AuditChain.jcsDetails(["n": .integer(42)]) == AuditChain.jcsDetails(["n": .number(42)]))
    }

    @Test("the hash version is part of the hash: one entry hashed as version 1 and 2 differs, and a chain of both verifies")
    func versionsCount() throws {
        let base = Self.link(1)
        let asV1 = AuditChain.Link(
            appID: base.appID, id: 1, atMicroseconds: base.atMicroseconds, actor: base.actor, action: base.action, pattern: base.pattern,
            revision: base.revision, details: base.details, hashVersion: .v1)
        let v1Hash = try AuditChain.hash(of: asV1, following: AuditChain.genesis)
        #expect(v1Hash != (try AuditChain.hash(of: base, following: AuditChain.genesis)))
        let second = Self.link(2)
        let secondHash = try AuditChain.hash(of: second, following: v1Hash)
        let verifier = Self.verify([(asV1, AuditChain.genesis, v1Hash), (second, v1Hash, secondHash)])
        #expect(verifier.broken == nil && verifier.head?.hash == secondHash)
        // Read back as the other version, the first entry no longer checks out.
        #expect(Self.verify([(base, AuditChain.genesis, v1Hash)]).broken?.id == 1)
    }

    @Test("details JSON cannot carry exactly are refused, never hashed as something else: past 2^53, not finite")
    func inexactNumbersRefused() {
        for details: [String: JSONValue] in [["n": .integer(1 << 53 + 1)], ["n": .integer(-(1 << 53) - 1)], ["n": .number(.infinity)], ["n": .number(.nan)]] {
            #expect(throws: AuditChain.UnencodableDetails.self) { try AuditChain.hash(of: Self.link(1, details: details), following: AuditChain.genesis) }
        }
        #expect((try? AuditChain.hash(of: Self.link(1, details: ["n": .integer(1 << 53)]), following: AuditChain.genesis)) != nil)
    }
}
