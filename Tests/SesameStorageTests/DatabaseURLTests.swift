import Testing

@testable import SesameStorage

@Suite("Database URL parsing")
struct DatabaseURLTests {
    @Test("a full URL yields every part, and its description hides the password")
    func fullURL() throws {
        let url = try DatabaseURL("postgres://sesame:s%40cret@db.internal:6432/sesame_prod?sslmode=require")
        #expect(url.host == "db.internal")
        #expect(url.port == 6432)
        #expect(url.username == "sesame")
        #expect(url.password == "s@cret")
        #expect(url.database == "sesame_prod")
        #expect(url.sslMode == "require")
        #expect(!url.description.contains("cret"))
    }

    @Test("port defaults to 5432 and TLS to disabled (loopback development)")
    func defaults() throws {
        let url = try DatabaseURL("postgresql://me@localhost/db")
        #expect(url.port == 5432)
        #expect(url.password == nil)
        #expect(url.sslMode == "disable")
    }

    @Test(
        "unusable URLs are refused with a reason",
        arguments: ["mysql://u@h/d", "postgres://h/d", "postgres://u@h", "postgres://u@h/", "not a url", "postgres://u@h/d?sslmode=maybe"]
    )
    func invalid(text: String) {
        #expect(throws: StorageError.self) { try DatabaseURL(text) }
    }
}
