import HTTPTypes

extension HTTPFields {
    /// The value of the field `name`, as `self[name]` gives it: the lone field's value, or every
    /// value joined when the field repeats; nil when there is none.
    ///
    /// For the hot path: the subscript joins even a lone value into a new string (copying a whole
    /// access token on every request to delivery); this returns the field's own string then.
    public func value(of name: HTTPField.Name) -> String? {
        var found: String?
        for field in self where field.name == name {
            if found != nil { return self[name] }
            found = field.value
        }
        return found
    }
}
