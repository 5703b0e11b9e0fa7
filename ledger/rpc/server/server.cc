#include "ledger/rpc/server/server.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"

namespace ledger::server {

absl::StatusOr<std::unique_ptr<Server>> Server::Start(auth::Gate* gate, const std::string& listen,
                                                      const std::vector<grpc::Service*>& services,
                                                      const ServerOptions& options) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("listen: '", listen, "' is not HOST:PORT"));
  }
  std::unique_ptr<Server> server(new Server());
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (!options.cert_pem.empty()) {
    auto tls = ServerTls::Create({options.cert_pem, options.key_pem, options.client_ca_pem});
    if (!tls.ok()) return absl::InvalidArgumentError(absl::StrCat("tls: ", tls.status().message()));
    server->tls_ = *std::move(tls);
    creds = server->tls_->Credentials();
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, creds, &server->port_);
  for (grpc::Service* s : services) builder.RegisterService(s);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(NewRpcLogFactory(gate, &server->rpc_stats_));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options.max_streams_per_connection);
  // Dead peers (a watch's client gone without a word) are found by pings.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20'000);
  // A connection without calls is closed after ten minutes, or the stream
  // idle time if longer (closing it sooner races with a client's next call).
  if (options.stream_idle_ms > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                               static_cast<int>(std::clamp<int64_t>(options.stream_idle_ms, 600'000, INT32_MAX)));
  }
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("listen: cannot listen on ", listen));
  }
  server->server_->GetHealthCheckService()->SetServingStatus(true);
  server->address_ = absl::StrCat(listen.substr(0, colon), ":", server->port_);
  return server;
}

Server::~Server() { Shutdown(); }

absl::StatusOr<std::unique_ptr<HealthServer>> HealthServer::Start(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("listen: '", listen, "' is not HOST:PORT"));
  }
  std::unique_ptr<HealthServer> h(new HealthServer());
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  h->server_ = builder.BuildAndStart();
  if (h->server_ == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("listen: cannot listen on ", listen));
  }
  h->server_->GetHealthCheckService()->SetServingStatus(true);
  h->address_ = absl::StrCat(listen.substr(0, colon), ":", port);
  return h;
}

HealthServer::~HealthServer() {
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
}

void HealthServer::SetServing(bool serving) { server_->GetHealthCheckService()->SetServingStatus(serving); }

absl::Status Server::ReloadTls(TlsPem pem) {
  if (tls_ == nullptr) return absl::FailedPreconditionError("tls: the server speaks plain text");
  return tls_->Replace(std::move(pem));
}

std::shared_ptr<grpc::Channel> Server::InProcessChannel() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 * 1024 * 1024);
  return server_->InProcessChannel(args);
}

void Server::Shutdown() {
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  server_->Wait();
  server_.reset();
}

}  // namespace ledger::server
