// Combine as SesameKit uses it (`ObservableObject`, whose default `objectWillChange` a class sends
// to by hand): Apple's published Swift signatures with their `@available` lines. Bodies never run.
// Not a product; nothing links it.

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
public final class ObservableObjectPublisher: @unchecked Sendable {
    public init() {}
    public func send() {}
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
public protocol ObservableObject: AnyObject {
    associatedtype ObjectWillChangePublisher = ObservableObjectPublisher
    var objectWillChange: Self.ObjectWillChangePublisher { get }
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
extension ObservableObject where Self.ObjectWillChangePublisher == ObservableObjectPublisher {
    public var objectWillChange: ObservableObjectPublisher { fatalError("a type-checking stub") }
}
