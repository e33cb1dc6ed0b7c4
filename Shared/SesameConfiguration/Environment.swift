/// The mode a Sesame service runs in.
///
/// Development favours a working local run (generated secrets, extra trust roots for tests);
/// production refuses to start when anything secret is missing or unsafe.
public enum DeploymentEnvironment: String, Sendable, CaseIterable {
    case development
    case production
}
