// SwiftUI as SesameKit uses it (a `DynamicProperty` property wrapper holding a `StateObject`):
// Apple's published Swift signatures (the iOS 18 SDK's, main-actor isolated as it declares them)
// with their `@available` lines. Bodies never run. Not a product; nothing links it.
@_exported import Combine

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
@MainActor @preconcurrency
public protocol DynamicProperty {
    mutating func update()
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
extension DynamicProperty {
    public mutating func update() {}
}

@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, *)
@MainActor @preconcurrency @propertyWrapper
public struct StateObject<ObjectType>: DynamicProperty where ObjectType: ObservableObject {
    public init(wrappedValue thunk: @autoclosure @escaping () -> ObjectType) { fatalError("a type-checking stub") }
    public var wrappedValue: ObjectType { fatalError("a type-checking stub") }
}
