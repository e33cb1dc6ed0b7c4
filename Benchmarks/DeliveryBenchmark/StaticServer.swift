import Foundation

/// nginx serving one JSON file at every path, on a free port, for comparison.
final class StaticServer {
    let port: Int
    private let process: Process
    private let directory: URL

    init(body: [UInt8]) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("sesame-nginx-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(body).write(to: directory.appendingPathComponent("config.json"))
        port = 20_000 + Int(getpid() % 20_000)
        let configuration = """
            daemon off;
            worker_processes auto;
            pid \(directory.path)/nginx.pid;
            error_log \(directory.path)/error.log warn;
            events { worker_connections 4096; }
            http {
                access_log off;
                client_body_temp_path \(directory.path)/body;
                proxy_temp_path \(directory.path)/proxy;
                fastcgi_temp_path \(directory.path)/fastcgi;
                uwsgi_temp_path \(directory.path)/uwsgi;
                scgi_temp_path \(directory.path)/scgi;
                server {
                    listen 127.0.0.1:\(port);
                    location / { default_type application/json; alias \(directory.path)/config.json; etag on; }
                }
            }
            """
        let path = directory.appendingPathComponent("nginx.conf")
        try configuration.write(to: path, atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: FileManager.default.fileExists(atPath: "/usr/sbin/nginx") ? "/usr/sbin/nginx" : "/usr/bin/nginx")
        process.arguments = ["-c", path.path, "-p", directory.path, "-e", directory.appendingPathComponent("error.log").path]
        try process.run()
        Thread.sleep(forTimeInterval: 0.5)
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }
}
