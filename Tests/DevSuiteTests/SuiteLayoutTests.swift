import DevSuite
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("The local suite's layout, from the environment ./sesame-dev sets")
struct SuiteLayoutTests {
    static let tools = [
        "SESAME_DEV_ROOT": "/checkout", "SESAME_DEV_HOME": "/checkout/.sesame-dev", "SESAME_DEV_PG_BIN": "/usr/lib/postgresql/15/bin",
        "SESAME_DEV_NGINX_BIN": "/usr/sbin/nginx", "SESAME_DEV_LIB_DIR": "/checkout/.sesame-dev/lib",
    ]

    @Test("the README's defaults: state under the home folder, the gateway on 8080 and the services after it")
    func defaults() throws {
        let layout = try SuiteLayout.fromEnvironment(Self.tools)
        #expect(layout.state == "/checkout/.sesame-dev/run")
        #expect([layout.gatewayPort, layout.authPort, layout.deliveryPort, layout.adminPort] == [Int]([8080, 8081, 8082, 8083]))
        #expect(layout.postgresPort == 55432 && layout.kafkaPort == 9092)
        #expect(layout.databaseURL == "postgres://sesame@127.0.0.1:55432/sesame")
        #expect(layout.logs == "/checkout/.sesame-dev/run/logs" && layout.pids == "/checkout/.sesame-dev/run/pids")
    }

    @Test("ports and the state folder move with their variables; a port that is not one is refused by name")
    func movedAndRefused() throws {
        var environment = Self.tools
        environment["SESAME_DEV_STATE"] = "/tmp/e2e"
        environment["SESAME_DEV_GATEWAY_PORT"] = "26080"
        environment["SESAME_DEV_DELIVERY_PORT"] = "26082"
        let layout = try SuiteLayout.fromEnvironment(environment)
        #expect(layout.state == "/tmp/e2e" && layout.gatewayPort == 26080 && layout.deliveryPort == 26082)

        environment["SESAME_DEV_PG_PORT"] = "70000"
        #expect { try SuiteLayout.fromEnvironment(environment) } throws: { "\($0)".contains("SESAME_DEV_PG_PORT is not a port") }
    }

    @Test("without the tools ./sesame-dev locates, the error says to run it through ./sesame-dev")
    func missingTools() {
        var environment = Self.tools
        environment["SESAME_DEV_PG_BIN"] = nil
        #expect { try SuiteLayout.fromEnvironment(environment) } throws: {
            "\($0)".contains("SESAME_DEV_PG_BIN is not set") && "\($0)".contains("./sesame-dev")
        }
    }

    @Test("the cluster lives in the state folder, or as root in a folder of its own per state folder under /tmp")
    func clusterFolder() throws {
        var environment = Self.tools
        environment["SESAME_DEV_STATE"] = "/tmp/one"
        let one = try SuiteLayout.fromEnvironment(environment)
        environment["SESAME_DEV_STATE"] = "/tmp/two"
        let two = try SuiteLayout.fromEnvironment(environment)
        if geteuid() == 0 {
            #expect(one.postgresRoot.hasPrefix("/tmp/sesame-dev-pg-") && one.postgresRoot != two.postgresRoot)
            #expect(one.postgresRoot == (try SuiteLayout.fromEnvironment(environment.merging(["SESAME_DEV_STATE": "/tmp/one"]) { $1 })).postgresRoot)
        } else {
            #expect(one.postgresRoot == "/tmp/one/postgres")
        }
        #expect(one.postgresData == one.postgresRoot + "/data")
    }
}

@Suite("The local suite's refusals")
struct DevelopmentSuiteTests {
    func suite(state: String) throws -> DevelopmentSuite {
        var environment = SuiteLayoutTests.tools
        environment["SESAME_DEV_STATE"] = state
        return DevelopmentSuite(layout: try SuiteLayout.fromEnvironment(environment))
    }

    @Test("up refuses replica counts outside 1–9 before it starts anything")
    func replicaBounds() async throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("suite-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let suite = try suite(state: state)
        await #expect { try await suite.up(Replicas(auth: 1, delivery: 10)) } throws: { "\($0)".contains("from 1 to 9") }
        await #expect { try await suite.up(Replicas(auth: 0, delivery: 1)) } throws: { "\($0)".contains("from 1 to 9") }
        #expect(!FileManager.default.fileExists(atPath: state), "a refused up made its state folder")
    }

    @Test("run without built services says how to build them")
    func runWithoutServices() async throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("suite-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        await #expect { _ = try await suite(state: state).run(.admin, ["--help"]) } throws: { "\($0)".contains("SESAME_DEV_BIN_DIR is not set") }
    }

    @Test("replica counts are those of the last up, one each when there was none")
    func replicaCounts() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("suite-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let suite = try suite(state: state)
        #expect(suite.replicas == Replicas(auth: 1, delivery: 1))
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try "3\n".write(toFile: state + "/delivery-replicas", atomically: true, encoding: .utf8)
        #expect(suite.replicas == Replicas(auth: 1, delivery: 3))
    }
}
