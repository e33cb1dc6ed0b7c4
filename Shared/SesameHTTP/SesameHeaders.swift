import HTTPTypes

/// Header names Sesame adds beyond the standard ones.
public enum SesameHeaders {
    /// The request id, also in every log line of the request as `hb.request.id`.
    public static let requestID = HTTPField.Name("X-Request-Id")!
}
