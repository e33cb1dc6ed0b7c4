import ArgumentParser
import Foundation
@testable import SesameCLI
import Testing

@Suite("sesame's command line: groups, the seed's aliases, naming a key to revoke")
struct CommandLineTests {
    @Test("every seed form stands for the grouped command of the same name")
    func aliases() throws {
        #expect(SesameCommand.aliases.count >= 25)
        for (alias, expansion) in SesameCommand.aliases {
            #expect(SesameCommand.expandingAliases([alias, "--json"]) == expansion + ["--json"])
            // Parsed alone, the alias is that command, or that command's usage error.
            do {
                let command = try SesameCommand.parse(commandLine: [alias])
                #expect(type(of: command)._commandName == expansion.last, "\(alias) parsed as \(type(of: command))")
            } catch {
                let message = SesameCommand.fullMessage(for: error)
                #expect(message.contains("sesame \(expansion.joined(separator: " "))"), "\(alias): \(message.prefix(200))")
            }
        }
        #expect(SesameCommand.aliases["keys:revoke"] == ["keys", "revoke"])
        #expect(SesameCommand.aliases["upload"] == ["config", "upload"])
        // Only a leading alias is expanded: an option's value that looks like one is left alone.
        #expect(SesameCommand.expandingAliases(["config", "view", "--url", "keys:list"]) == ["config", "view", "--url", "keys:list"])
    }

    @Test("a group answers --help with its commands")
    func groupHelp() throws {
        let help = SesameCommand.helpMessage(for: KeysGroup.self)
        for command in ["create", "list", "revoke"] { #expect(help.contains(command)) }
        #expect(SesameCommand.completionScript(for: .bash).contains("debug-tokens"))
    }

    @Test("devices list writes a revocation as the server's time and the reason; a live device as -")
    func deviceRevocation() {
        var device = Components.Schemas.Device(
            keyId: "k", environment: .production, tier: .attested, firstSeen: Date(timeIntervalSince1970: 0), counter: 0)
        #expect(DevicesListCommand.revocation(device) == "-")
        device.revokedAt = Date(timeIntervalSince1970: 86_400)
        device.revokedReason = "reported stolen"
        #expect(DevicesListCommand.revocation(device) == "1970-01-02T00:00:00Z (reported stolen)")
    }

    @Test("keys revoke takes the key's id or the key as its argument")
    func revokeTarget() throws {
        let id = "3F2504E0-4F89-11D3-9A0C-0305E82C3301"
        #expect(try KeysRevokeCommand.parse([id]).revocationBody() == .init(keyId: id))
        let key = "sk_prod_" + String(repeating: "k", count: 43)
        #expect(try KeysRevokeCommand.parse([key, "--key", "sk_prod_mine"]).revocationBody() == .init(key: key))
        // The caller's own credential is never taken for the key to revoke.
        #expect(try KeysRevokeCommand.parse(["--key", key, id]).revocationBody() == .init(keyId: id))
    }
}
