import ConfigSchema
import Foundation
import Hummingbird
import SesameDomain
import SesameHTTP

/// `config/schema` (attach, read, detach the JSON Schemas configs must match) and
/// `config/validate` (check a config against them without publishing it).
struct ConfigSchemaRoutes {
    let authenticator: AdminAuthenticator
    let configs: ConfigStore

    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.get("config/schema") { request, _ -> SchemasResponse in
            let (appID, _) = try await authenticator.app(of: request)
            let pattern = try request.uri.queryParameters.get("version").map { try ConfigRoutes.validConfigPattern(String($0)) }
            return SchemasResponse(schemas: try await configs.schemas(appID: appID, pattern: pattern).map(SchemaInfo.init))
        }

        group.put("config/schema") { request, context -> SchemaChangeResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            let body = try await request.decode(as: SchemaRequest.self, context: context)
            let pattern = try body.version.map { try ConfigRoutes.validConfigPattern($0) }
            try await configs.attachSchema(body.schema, appID: appID, pattern: pattern, caller: caller)
            return SchemaChangeResponse(
                message: "Configs of \(Self.scope(pattern)) must now match this schema: uploads that do not are refused (422 config_invalid).")
        }

        group.delete("config/schema") { request, _ -> SchemaChangeResponse in
            let (appID, caller) = try await authenticator.app(of: request)
            let pattern = try request.uri.queryParameters.get("version").map { try ConfigRoutes.validConfigPattern(String($0)) }
            guard try await configs.detachSchema(appID: appID, pattern: pattern, caller: caller) else {
                throw AdminErrors.schemaNotFound(Self.scope(pattern))
            }
            return SchemaChangeResponse(message: "Configs of \(Self.scope(pattern)) no longer have to match a schema of their own.")
        }

        group.post("config/validate") { request, context -> ValidateResponse in
            let (appID, _) = try await authenticator.app(of: request)
            let body = try await request.decode(as: ValidateRequest.self, context: context)
            let pattern = try ConfigRoutes.validConfigPattern(body.version)
            guard body.config.objectValue != nil else { throw APIError.invalidField("config", "must be a JSON object") }
            let violations = ConfigStore.violations(of: body.config, against: try await configs.schemas(appID: appID, pattern: pattern))
            return ValidateResponse(valid: violations.isEmpty, violations: violations)
        }
    }

    static func scope(_ pattern: String?) -> String { pattern.map { "version pattern '\($0)'" } ?? "every version pattern" }
}

/// `PUT /v1/admin/config/schema`.
struct SchemaRequest: Decodable {
    /// The version pattern the schema is for; absent for every pattern of the app.
    let version: String?
    let schema: JSONValue
}

/// `POST /v1/admin/config/validate`.
struct ValidateRequest: Decodable {
    let version: String
    let config: JSONValue
}

/// `GET /v1/admin/config/schema`.
struct SchemasResponse: ResponseEncodable {
    let schemas: [SchemaInfo]
}

struct SchemaInfo: Encodable, Sendable {
    /// nil: the schema every pattern's configs must match.
    let pattern: String?
    let schema: JSONValue
    let updatedBy: String
    let updatedAt: Date

    init(_ attached: AttachedSchema) {
        pattern = attached.pattern
        schema = attached.schema.document
        updatedBy = attached.updatedBy
        updatedAt = attached.updatedAt
    }
}

struct SchemaChangeResponse: ResponseEncodable {
    let message: String
}

/// `POST /v1/admin/config/validate`: the verdict without publishing.
struct ValidateResponse: ResponseEncodable {
    let valid: Bool
    let violations: [APIError.Violation]
}
