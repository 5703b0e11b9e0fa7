#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "ledger/log/log.h"
#include "ledger/note/note.h"
#include "ledger/service/service.h"
#include "ledger_service.grpc.pb.h"
#include "ops/http.h"
#include "ops/metrics.h"
#include "tests/util/temp_dir.h"

namespace ledger::ops {
namespace {

namespace pb = evidence::ledger::v1;

// Sends `raw` to `address` and returns everything the server answers.
std::string Exchange(const std::string& address, const std::string& raw) {
  int port = std::stoi(address.substr(address.rfind(':') + 1));
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return "connect failed";
  ::send(fd, raw.data(), raw.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

TEST(Http, RoutesQueriesAndRefusals) {
  auto server = HttpServer::Start("127.0.0.1:0", [](const HttpRequest& r) {
    if (r.path != "/echo") return Text(404, "no\n");
    return Text(200, r.path + "|" + r.query.at("team") + "|" + r.headers.at("x-id"));
  });
  ASSERT_TRUE(server.ok()) << server.status();
  std::string addr = (*server)->address();
  std::string ok = Exchange(addr, "GET /echo?team=team%2Da+x HTTP/1.1\r\nHost: x\r\nX-Id: 7\r\n\r\n");
  EXPECT_EQ(ok.substr(0, 15), "HTTP/1.1 200 OK");
  EXPECT_NE(ok.find("Content-Length: 16\r\n"), std::string::npos) << ok;
  EXPECT_EQ(ok.substr(ok.size() - 16), "/echo|team-a x|7");
  EXPECT_EQ(Exchange(addr, "GET /other HTTP/1.1\r\n\r\n").substr(0, 12), "HTTP/1.1 404");
  EXPECT_EQ(Exchange(addr, "POST /echo HTTP/1.1\r\n\r\n").substr(0, 12), "HTTP/1.1 405");
  EXPECT_EQ(Exchange(addr, "GET /echo?team=%zz HTTP/1.1\r\n\r\n").substr(0, 12), "HTTP/1.1 400");
  EXPECT_EQ(Exchange(addr, "NONSENSE\r\n\r\n").substr(0, 12), "HTTP/1.1 400");
  EXPECT_EQ(Exchange(addr, "GET / HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n").substr(0, 12),
            "HTTP/1.1 431");
  std::string head = Exchange(addr, "HEAD /echo?team=a HTTP/1.1\r\nX-Id: 1\r\n\r\n");
  EXPECT_EQ(head.substr(head.size() - 4), "\r\n\r\n");  // headers only
}

TEST(Http, EscapingHelpers) {
  EXPECT_EQ(*UrlDecode("a%20b+c"), "a b c");
  EXPECT_FALSE(UrlDecode("%2").ok());
  EXPECT_FALSE(UrlDecode("%g0").ok());
  EXPECT_EQ(HtmlEscape("<a href=\"x\">&'</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
}

TEST(Metrics, FiguresFromARealServer) {
  testing::TempDir dir;
  log::Log::Options o;
  o.data_dir = dir.Sub("data");
  o.origin = "ops.test/log";
  o.checkpoint_interval_ms = 10;
  auto log = log::Log::Open(o, *note::Signer::Generate(o.origin));
  ASSERT_TRUE(log.ok()) << log.status();
  auth::Gate gate({}, nullptr);
  auto server = service::Server::Start(log->get(), &gate, "127.0.0.1:0");
  ASSERT_TRUE(server.ok());
  auto stub = pb::LedgerService::NewStub(
      grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials()));
  pb::AppendRequest req;
  for (int i = 0; i < 3; ++i) {
    pb::Receipt* r = req.add_receipts();
    r->set_receipt_id("r-" + std::to_string(i));
    r->set_team(i == 2 ? "Bad Team" : "team-a");
    r->set_run_id("run");
    r->set_step_id("s");
    r->set_occurred_at_us(1767225600000000);
    r->mutable_model_call()->set_route("m");
    r->mutable_model_call()->set_decision(pb::DECISION_ALLOW);
  }
  pb::AppendResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub->Append(&ctx, req, &resp).ok());
  grpc::ClientContext ctx2;
  ASSERT_TRUE(stub->Append(&ctx2, req, &resp).ok());  // the same again: duplicates
  (*log)->WaitForMore(1, std::chrono::seconds(5));
  while ((*log)->LatestCheckpointTime().first < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));

  Metrics metrics({.log = log->get(), .ledger = &(*server)->service()});
  std::string text = metrics.Render();
  for (const char* want : {
           "ledger_appends_total{kind=\"model_call\",result=\"ok\"} 2\n",
           "ledger_appends_total{kind=\"model_call\",result=\"duplicate\"} 2\n",
           "ledger_appends_total{kind=\"model_call\",result=\"invalid_argument\"} 2\n",
           "ledger_append_request_receipts_bucket{le=\"5\"} 2\n",
           "ledger_append_request_receipts_count 2\n",
           "ledger_commit_entries_count 1\n",
           "ledger_commit_entries_sum 2\n",
           "ledger_tree_size 2\n",
           "ledger_checkpoint_tree_size 2\n",
           "# TYPE ledger_fsync_seconds histogram\n",
           "# TYPE ledger_checkpoint_age_seconds gauge\n",
           "ledger_store_failed 0\n",
       }) {
    EXPECT_NE(text.find(want), std::string::npos) << "missing " << want << " in\n" << text;
  }
  EXPECT_EQ(text.find("ledger_fsync_seconds_count 0\n"), std::string::npos) << "no sync was timed";
}

}  // namespace
}  // namespace ledger::ops
