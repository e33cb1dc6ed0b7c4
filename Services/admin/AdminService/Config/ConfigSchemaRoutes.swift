import ConfigSchema
import Foundation
import Hummingbird
import SesameDomain
import SesameHTTP
import SesameJSON

/// `config/schema` (attach, read, detach the JSON Schemas configs must match) and
/// `config/validate` (check a config against them without publishing it).
struct ConfigSchemaRoutes {
    let authenticator: AdminAuthenticator
    let configs: ConfigStore
    let approvals: ChangeApprovals

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.get("config/schema") { request, _ -> SchemasResponse in
            let (appID, _) = try await authenticator.app(of: request)
            let pattern = try request.uri.queryParameters.get("version").map { try ConfigRoutes.validConfigPattern(String($0)) }
            return SchemasResponse(schemas: try await configs.schemas(appID: appID, pattern: pattern).map(SchemaInfo.init))
        }

        approvals.register(
            .schema, SchemaRequest.self,
            prepare: { appID, body in
                let pattern = try body.version.map { try ConfigRoutes.validConfigPattern($0) }
                try Self.usable(body.schema)
                return ("attach a schema to \(Self.scope(pattern))", try await currentSchema(appID: appID, pattern: pattern))
            },
            apply: { appID, body, caller in
                let pattern = try body.version.map { try ConfigRoutes.validConfigPattern($0) }
                guard let schema = body.schema else { throw APIError.invalidField("schema", "is required") }
                try await configs.attachSchema(schema, appID: appID, pattern: pattern, caller: caller)
                return SchemaChangeResponse(
                    message: "Configs of \(Self.scope(pattern)) must now match this schema: uploads that do not are refused (422 config_invalid).")
            })
        approvals.register(
            .schema, SchemaRequest.self,
            prepare: { appID, body in
                let pattern = try body.version.map { try ConfigRoutes.validConfigPattern($0) }
                return ("detach the schema of \(Self.scope(pattern))", try await currentSchema(appID: appID, pattern: pattern))
            },
            apply: { appID, body, caller in
                let pattern = try body.version.map { try ConfigRoutes.validConfigPattern($0) }
                guard try await configs.detachSchema(appID: appID, pattern: pattern, caller: caller) else {
                    throw AdminErrors.schemaNotFound(Self.scope(pattern))
                }
                return SchemaChangeResponse(message: "Configs of \(Self.scope(pattern)) no longer have to match a schema of their own.")
            },
            as: "remove")

        group.put("config/schema") { request, context -> Response in
            let (appID, caller) = try await authenticator.app(of: request)
            let body = try await request.decode(as: SchemaRequest.self, context: context)
            _ = try body.version.map { try ConfigRoutes.validConfigPattern($0) }
            try Self.usable(body.schema)
            return try await approvals.handle(.schema, appID: appID, caller: caller, body: body, request: request, context: context)
        }

        group.delete("config/schema") { request, context -> Response in
            let (appID, caller) = try await authenticator.app(of: request)
            let version = request.uri.queryParameters.get("version").map { String($0) }
            _ = try version.map { try ConfigRoutes.validConfigPattern($0) }
            return try await approvals.handle(
                .schema, variant: "remove", appID: appID, caller: caller, body: SchemaRequest(version: version, schema: nil), request: request,
                context: context)
        }

        group.post("config/validate") { request, context -> ValidateResponse in
            let (appID, _) = try await authenticator.app(of: request)
            let body = try await request.decode(as: ValidateRequest.self, context: context)
            let pattern = try ConfigRoutes.validConfigPattern(body.version)
            guard body.config.objectValue != nil else { throw APIError.invalidField("config", "must be a JSON object") }
            let violations = try await configs.violations(of: body.config, against: try await configs.schemas(appID: appID, pattern: pattern), appID: appID)
            return ValidateResponse(valid: violations.isEmpty, violations: violations)
        }
    }

    /// The schema attached to `pattern` now, as sorted JSON: what a proposed schema change is made against.
    func currentSchema(appID: String, pattern: String?) async throws -> String {
        let attached = try await configs.schemas(appID: appID, pattern: pattern ?? "").first { $0.pattern == pattern }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try attached.map { String(decoding: try encoder.encode($0.schema.document), as: UTF8.self) } ?? "none"
    }

    /// Refuses a missing schema, or one Sesame cannot enforce (`422 schema_invalid`), before it is proposed or attached.
    static func usable(_ document: JSONValue?) throws {
        guard let document else { throw APIError.invalidField("schema", "is required") }
        do {
            _ = try ConfigSchema(document)
        } catch {
            throw AdminErrors.schemaInvalid(error.description)
        }
    }

    static func scope(_ pattern: String?) -> String { pattern.map { "version pattern '\($0)'" } ?? "every version pattern" }
}

/// `PUT /v1/admin/config/schema`.
struct SchemaRequest: Codable, Sendable {
    /// The version pattern the schema is for; absent for every pattern of the app.
    let version: String?
    /// The schema to attach (absent in a proposed detachment).
    let schema: JSONValue?
}

/// `POST /v1/admin/config/validate`, and its verdict without publishing.
typealias ValidateRequest = Operations.validateConfig.Input.Body.jsonPayload
typealias ValidateResponse = Operations.validateConfig.Output.Ok.Body.jsonPayload
/// `GET /v1/admin/config/schema`; a schema's `pattern` is absent for the one every pattern's configs must match.
typealias SchemasResponse = Operations.getConfigSchemas.Output.Ok.Body.jsonPayload
typealias SchemaInfo = SchemasResponse.schemasPayloadPayload
/// What attaching or detaching a schema answers.
typealias SchemaChangeResponse = Operations.attachConfigSchema.Output.Ok.Body.jsonPayload

extension ValidateResponse: ResponseEncodable {}
extension SchemasResponse: ResponseEncodable {}
extension SchemaChangeResponse: ChangeAnswer {}

extension SchemaInfo {
    init(_ attached: AttachedSchema) {
        self.init(pattern: attached.pattern, schema: attached.schema.document, updatedBy: attached.updatedBy, updatedAt: attached.updatedAt)
    }
}
