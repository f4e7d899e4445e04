#include "ir/parser.hpp"

#include <cctype>
#include <cstdlib>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "support/file_read.hpp"

namespace tessera::ir {
namespace {

constexpr int kMaxNesting = 64;

class Parser {
 public:
  Parser(const std::string& text, std::string file) : s_(text), file_(std::move(file)) {}

  std::unique_ptr<Module> module() {
    auto m = std::make_unique<Module>();
    skip_ws();
    while (!at_end()) {
      m->ops.push_back(top_level_op(*m));
      skip_ws();
    }
    return m;
  }

  Type type_only() {
    skip_ws();
    Type t = type();
    skip_ws();
    if (!at_end()) error("E100", "unexpected text after type");
    return t;
  }

 private:
  // ---- characters and locations -------------------------------------------
  bool at_end() const { return pos_ >= s_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
  // Line/column are counted forward from the last query (positions only grow
  // between queries except on rare backtracks), keeping this linear overall.
  SourceLoc loc() const {
    if (pos_ < loc_pos_) {
      loc_pos_ = 0;
      loc_line_ = 1;
      loc_col_ = 1;
    }
    for (; loc_pos_ < pos_ && loc_pos_ < s_.size(); ++loc_pos_) {
      if (s_[loc_pos_] == '\n') {
        ++loc_line_;
        loc_col_ = 1;
      } else {
        ++loc_col_;
      }
    }
    return SourceLoc{file_, loc_line_, loc_col_};
  }
  [[noreturn]] void error(const std::string& code, const std::string& msg) { fail(code, msg, loc()); }
  [[noreturn]] void error_at(const SourceLoc& l, const std::string& code, const std::string& msg) {
    fail(code, msg, l);
  }
  std::string describe_next() const {
    if (at_end()) return "end of input";
    char c = peek();
    if (std::isprint(static_cast<unsigned char>(c))) return std::string("'") + c + "'";
    return "byte '" + echo(std::string_view(&s_[pos_], 1)) + "'";
  }

  void skip_ws() {
    while (!at_end()) {
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '/' && peek(1) == '/') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  bool try_consume(const std::string& tok) {
    skip_ws();
    if (s_.compare(pos_, tok.size(), tok) == 0) {
      pos_ += tok.size();
      return true;
    }
    return false;
  }
  void expect(const std::string& tok) {
    if (!try_consume(tok)) error("E100", "expected '" + tok + "', found " + describe_next());
  }
  static bool ident_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
  }
  std::string ident(const char* what) {
    skip_ws();
    size_t start = pos_;
    while (!at_end() && ident_char(peek())) ++pos_;
    if (start == pos_) error("E100", std::string("expected ") + what + ", found " + describe_next());
    return s_.substr(start, pos_ - start);
  }
  bool peek_is(char c) {
    skip_ws();
    return peek() == c;
  }

  // ---- types ----------------------------------------------------------------
  DType dtype_named(const std::string& name, const SourceLoc& l) {
    auto d = parse_dtype(name);
    if (!d) error_at(l, "E103", "unknown element type '" + echo(name) + "' (expected f16, bf16, f32 or f64)");
    return *d;
  }

  Type type() {
    skip_ws();
    SourceLoc l = loc();
    std::string head = ident("a type");
    if (head == "index") return Type::index();
    if (head == "tensor" || head == "tile" || head == "ptr") {
      if (peek() != '<') error("E103", "expected '<' after '" + echo(head) + "'");
      ++pos_;
      size_t start = pos_;
      while (!at_end() && peek() != '>' && peek() != '\n') ++pos_;
      if (peek() != '>') error_at(l, "E103", "unterminated type '" + echo(head) + "<'");
      std::string body = s_.substr(start, pos_ - start);
      ++pos_;
      if (head == "ptr") return Type::ptr(dtype_named(body, l));
      // dims are separated by 'x'; the element type comes last ("4x8xf32", "f32")
      std::vector<int64_t> dims;
      size_t p = 0;
      while (true) {
        size_t x = body.find('x', p);
        if (x == std::string::npos) break;
        std::string dim = body.substr(p, x - p);
        if (dim.empty() || dim.size() > 18 || dim.find_first_not_of("0123456789") != std::string::npos)
          error_at(l, "E103",
                   "bad dimension '" + echo(dim) + "' in type '" + echo(head + "<" + body + ">") +
                       "' (dimensions are non-negative integers; rank 0 is '" + head + "<f32>')");
        dims.push_back(std::stoll(dim));
        p = x + 1;
      }
      DType d = dtype_named(body.substr(p), l);
      if (head == "tile" && dims.empty()) error_at(l, "E103", "a tile type needs at least one dimension");
      Type t = head == "tensor" ? Type::tensor(d, dims) : Type::tile(d, dims);
      if (!t.checked_numel())
        error_at(l, "E103",
                 "type '" + echo(head + "<" + body + ">") + "' has more elements or bytes than fit in 64 bits");
      return t;
    }
    return Type::scalar(dtype_named(head, l));
  }

  std::vector<Type> type_list_or_single() {
    std::vector<Type> out;
    if (try_consume("(")) {
      if (try_consume(")")) return out;
      do out.push_back(type());
      while (try_consume(","));
      expect(")");
      return out;
    }
    // MLIR style without parentheses: "t1, t2" (nothing else can follow a comma here)
    do out.push_back(type());
    while (try_consume(","));
    return out;
  }

  // ---- attributes ----------------------------------------------------------
  Attr attr_value(int depth) {
    if (depth > kMaxNesting) error("E105", "attribute nested too deeply");
    skip_ws();
    char c = peek();
    if (c == '"') return Attr(string_literal());
    if (c == '[') {
      ++pos_;
      AttrList l;
      if (try_consume("]")) return Attr(std::move(l));
      do l.push_back(attr_value(depth + 1));
      while (try_consume(","));
      expect("]");
      return Attr(std::move(l));
    }
    if (c == '-' || c == '+' || std::isdigit(static_cast<unsigned char>(c))) return number();
    SourceLoc l = loc();
    size_t save = pos_;
    std::string word = ident("an attribute value");
    if (word == "true") return Attr(true);
    if (word == "false") return Attr(false);
    if (word == "nan") return Attr(std::numeric_limits<double>::quiet_NaN());
    if (word == "inf") return Attr(std::numeric_limits<double>::infinity());
    if (word == "tensor" || word == "tile" || word == "ptr" || word == "index" || parse_dtype(word)) {
      pos_ = save;
      return Attr(type());
    }
    error_at(l, "E105", "unknown attribute value '" + echo(word) + "'");
  }

  Attr number() {
    SourceLoc l = loc();
    size_t start = pos_;
    if (peek() == '-' || peek() == '+') ++pos_;
    if (s_.compare(pos_, 3, "inf") == 0) {
      pos_ += 3;
      return Attr(s_[start] == '-' ? -std::numeric_limits<double>::infinity()
                                   : std::numeric_limits<double>::infinity());
    }
    bool is_float = false;
    while (!at_end()) {
      char c = peek();
      if (std::isdigit(static_cast<unsigned char>(c))) {
        ++pos_;
        continue;
      }
      if (c == '.' || c == 'e' || c == 'E') {
        is_float = true;
        ++pos_;
        if ((c == 'e' || c == 'E') && (peek() == '-' || peek() == '+')) ++pos_;
        continue;
      }
      break;
    }
    std::string text = s_.substr(start, pos_ - start);
    errno = 0;
    char* end = nullptr;
    if (is_float) {
      double d = std::strtod(text.c_str(), &end);
      if (end != text.c_str() + text.size()) error_at(l, "E105", "malformed number '" + echo(text) + "'");
      return Attr(d);
    }
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (end != text.c_str() + text.size() || text == "-" || text == "+")
      error_at(l, "E105", "malformed number '" + echo(text) + "'");
    if (errno == ERANGE) error_at(l, "E105", "integer '" + echo(text) + "' does not fit in 64 bits");
    return Attr(static_cast<int64_t>(v));
  }

  std::string string_literal() {
    SourceLoc l = loc();
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (at_end()) error_at(l, "E106", "unterminated string literal");
      char c = s_[pos_++];
      if (c == '"') return out;
      if (c == '\n') error_at(l, "E106", "unterminated string literal (newline in string)");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_end()) error_at(l, "E106", "unterminated string literal");
      char e = s_[pos_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        default: {
          auto hex = [](char h) -> int {
            if (h >= '0' && h <= '9') return h - '0';
            if (h >= 'a' && h <= 'f') return h - 'a' + 10;
            if (h >= 'A' && h <= 'F') return h - 'A' + 10;
            return -1;
          };
          int hi = hex(e), lo = hex(peek());
          if (hi < 0 || lo < 0) error("E106", "bad escape in string literal");
          ++pos_;
          out += static_cast<char>(hi * 16 + lo);
        }
      }
    }
  }

  AttrDict attr_dict() {
    AttrDict d;
    expect("{");
    if (try_consume("}")) return d;
    do {
      SourceLoc l = loc();
      std::string key = ident("an attribute name");
      if (d.count(key)) error_at(l, "E105", "duplicate attribute '" + echo(key) + "'");
      expect("=");
      d[key] = attr_value(0);
    } while (try_consume(","));
    expect("}");
    return d;
  }

  // ---- values and ops --------------------------------------------------------
  std::string value_name() {
    skip_ws();
    if (peek() != '%') error("E100", "expected a value ('%name'), found " + describe_next());
    ++pos_;
    size_t start = pos_;
    // letters, digits, '_' and '.' (as MLIR; fused regions name their values "f0.x")
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_' || peek() == '.')) ++pos_;
    if (start == pos_) error("E100", "expected a value name after '%'");
    return s_.substr(start, pos_ - start);
  }

  Value* use(const std::string& name, const SourceLoc& l) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return f->second;
    }
    error_at(l, "E101", "use of undefined value '%" + echo(name) + "'");
  }

  void define(Value* v, const SourceLoc& l) {
    if (!defined_.insert(v->name).second) error_at(l, "E102", "redefinition of value '%" + echo(v->name) + "'");
    scopes_.back()[v->name] = v;
  }

  void region_args(Region& r) {
    expect("(");
    if (try_consume(")")) return;
    do {
      skip_ws();
      SourceLoc l = loc();
      std::string n = value_name();
      expect(":");
      define(r.add_arg(n, type()), l);
    } while (try_consume(","));
    expect(")");
  }

  void region_body(Region& r, int depth) {
    if (depth > kMaxNesting) error("E108", "regions nested more than 64 deep");
    expect("{");
    while (!try_consume("}")) {
      if (at_end()) error("E107", "unexpected end of input: missing '}'");
      std::unique_ptr<Op> o = op(depth);
      for (auto& c : pending_) r.ops.push_back(std::move(c));
      pending_.clear();
      r.ops.push_back(std::move(o));
    }
  }

  std::unique_ptr<Op> top_level_op(Module& m) {
    defined_.clear();
    scopes_.clear();
    scopes_.emplace_back();
    SourceLoc l = loc();
    const bool is_func = try_consume("func");
    std::unique_ptr<Op> o = is_func ? func() : op(0);
    if (is_func) o->loc = l;
    if (!o->sym.empty() && m.lookup(o->sym)) error_at(l, "E102", "redefinition of symbol '@" + echo(o->sym) + "'");
    return o;
  }

  std::unique_ptr<Op> func() {
    auto f = std::make_unique<Op>();
    f->name = "func";
    skip_ws();
    if (!try_consume("@")) error("E100", "expected '@name' after 'func', found " + describe_next());
    f->sym = ident("a function name");
    Region& body = f->add_region();
    region_args(body);
    AttrList results;
    if (try_consume("->"))
      for (Type& t : type_list_or_single()) results.emplace_back(t);
    // MLIR's spelling of a func's own attributes (index_guards)
    if (try_consume("attributes")) {
      SourceLoc l = loc();
      f->attrs = attr_dict();
      if (f->attrs.count("result_types")) error_at(l, "E105", "'result_types' is written as '-> (...)'");
    }
    f->attrs["result_types"] = Attr(std::move(results));
    region_body(body, 1);
    return f;
  }

  std::unique_ptr<Op> op(int depth) {
    skip_ws();
    SourceLoc l = loc();
    auto o = std::make_unique<Op>();
    o->loc = l;
    std::vector<std::pair<std::string, SourceLoc>> result_names;
    if (peek() == '%') {
      do {
        skip_ws();
        SourceLoc rl = loc();
        result_names.emplace_back(value_name(), rl);
      } while (try_consume(","));
      expect("=");
    }
    skip_ws();
    SourceLoc name_loc = loc();
    o->name = ident("an operation name");
    o->loc = name_loc;  // semantic errors point at the op name, as MLIR does
    if (o->name == "func") error_at(name_loc, "E100", "'func' is only allowed at the top level");
    if (try_consume("@")) o->sym = ident("a symbol name");
    std::vector<std::pair<std::string, SourceLoc>> operand_names;
    std::vector<std::pair<size_t, Attr>> literals;  // operand index, value
    if (peek_is('%') || peek_is_number()) {
      do {
        skip_ws();
        SourceLoc ol = loc();
        if (peek() == '%' || !peek_is_number()) {
          operand_names.emplace_back(value_name(), ol);  // E100 unless a value name
        } else {
          literals.emplace_back(operand_names.size(), number());
          operand_names.emplace_back("", ol);
        }
      } while (try_consume(","));
    }
    for (auto& [n, ol] : operand_names) o->operands.push_back(n.empty() ? nullptr : use(n, ol));
    if (peek_is('{')) o->attrs = attr_dict();
    std::vector<Type> result_types;
    if (try_consume(":")) {
      SourceLoc tl = loc();
      std::vector<Type> in = type_list_or_single();
      if (try_consume("->")) result_types = type_list_or_single();
      if (in.size() != o->operands.size())
        error_at(tl, "E104",
                 "'" + echo(o->name) + "' has " + std::to_string(o->operands.size()) +
                     " operands but its signature lists " + std::to_string(in.size()) + " types");
      for (auto& [i, value] : literals)
        o->operands[i] = literal_constant(*o, depth, value, in[i], result_names, i, operand_names[i].second);
      for (size_t i = 0; i < in.size(); ++i)
        if (!(in[i] == o->operands[i]->type))
          error_at(operand_names[i].second, "E104",
                   "operand '%" + echo(o->operands[i]->name) + "' has type " + o->operands[i]->type.str() +
                       " but the signature says " + in[i].str());
    } else if (!o->operands.empty()) {
      error("E100", "expected ':' and a type signature after the operands of '" + echo(o->name) + "'");
    }
    if (result_types.size() != result_names.size())
      error_at(l, "E104",
               "'" + echo(o->name) + "' defines " + std::to_string(result_names.size()) +
                   " results but its signature lists " + std::to_string(result_types.size()));
    // This op's literal constants wait in pending_ while its regions (with
    // their own ops) are parsed.
    std::vector<std::unique_ptr<Op>> own_literals = std::move(pending_);
    pending_.clear();
    while (try_consume("region")) {
      Region& r = o->add_region();
      scopes_.emplace_back();
      region_args(r);
      region_body(r, depth + 1);
      scopes_.pop_back();
    }
    pending_ = std::move(own_literals);
    for (size_t i = 0; i < result_names.size(); ++i)
      define(o->add_result(result_names[i].first, result_types[i]), result_names[i].second);
    return o;
  }

  // A number written as an operand of a Graph IR op (`tessera.mul %x, 2.0 :
  // (tensor<4xf32>, tensor<f32>) -> ...`): a tessera.constant of the type the
  // signature gives it, inserted before the op (region_body takes it from
  // pending_) and named after the op's first result.
  Value* literal_constant(const Op& o, int depth, const Attr& value, const Type& type,
                          const std::vector<std::pair<std::string, SourceLoc>>& result_names, size_t index,
                          const SourceLoc& l) {
    if (depth != 1 || o.name.rfind("tessera.", 0) != 0 || result_names.empty())
      error_at(l, "E100", "a number as an operand is allowed only for a Graph IR op (tessera.*) in a func body");
    if (!type.is_tensor()) error_at(l, "E104", "a number operand needs a tensor type in the signature");
    auto c = std::make_unique<Op>();
    c->name = "tessera.constant";
    c->loc = l;
    c->attrs["value"] = value;
    Value* v = c->add_result(result_names[0].first + ".lit" + std::to_string(index), type);
    define(v, l);
    pending_.push_back(std::move(c));
    return v;
  }

  bool peek_is_number() {
    skip_ws();
    if (at_end()) return false;
    const char c = peek();
    return std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || s_.compare(pos_, 3, "inf") == 0;
  }

  const std::string& s_;
  std::string file_;
  std::vector<std::unique_ptr<Op>> pending_;  // literal constants of the op being parsed
  size_t pos_ = 0;
  mutable size_t loc_pos_ = 0;
  mutable int loc_line_ = 1, loc_col_ = 1;
  std::vector<std::unordered_map<std::string, Value*>> scopes_;
  std::unordered_set<std::string> defined_;
};

}  // namespace

std::unique_ptr<Module> parse(const std::string& text, const std::string& filename) {
  Parser p(text, filename);
  return p.module();
}

std::unique_ptr<Module> parse_file(const std::string& path) {
  std::string why;  // a FIFO or device is refused, never read (it could block forever)
  std::optional<std::string> text = read_regular_file(path, why);
  if (!text) fail("E109", "cannot read IR file '" + echo(path, 1000) + "': " + why);
  return parse(*text, path);
}

Type parse_type(const std::string& text) {
  Parser p(text, "<type>");
  return p.type_only();
}

}  // namespace tessera::ir
