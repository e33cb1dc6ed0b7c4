import HTTPTypes
import SesameHTTP
import Testing

/// Every refusal the HTTP layer makes by itself carries a declared code.
@Suite("Error codes of the HTTP layer")
struct ErrorCodesTests {
    @Test("a status Hummingbird raised keeps its status and gets a declared code: its own where one fits, else bad_request or internal_error")
    func statusesGetDeclaredCodes() {
        let declared = Set(CommonErrorCode.codes)
        let statuses: [HTTPResponse.Status] = [
            .notFound, .methodNotAllowed, .contentTooLarge, .badRequest, .unsupportedMediaType, .uriTooLong, .requestTimeout, .lengthRequired,
            .requestHeaderFieldsTooLarge, .internalServerError, .badGateway,
        ]
        for status in statuses {
            let error = APIError.forStatus(status)
            #expect(declared.contains(error.code), "\(status.code) answers \(error.code)")
            #expect(error.status == (status.code >= 500 ? .internalServerError : status))
        }
        #expect(APIError.forStatus(.uriTooLong).code == "bad_request")
        #expect(APIError.forStatus(.methodNotAllowed).code == "method_not_allowed")
    }

    @Test("each set's codes are snake_case and distinct")
    func codesAreWellFormed() {
        let codes = CommonErrorCode.codes + AccessTokenErrorCode.codes
        #expect(Set(codes).count == codes.count)
        #expect(codes.allSatisfy { $0.allSatisfy { $0 == "_" || ($0.isLowercase && $0.isLetter) } }, "\(codes)")
    }
}
