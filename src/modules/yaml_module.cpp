// gpubind-yaml.so: YAML read by libyaml (its document loader) and handed back as JSON text.
#include <yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "modules/module_side.hpp"
#include "sys/yaml_api.hpp"

namespace {

// Bounds for text the tool did not write: nesting, and nodes after aliases are expanded (a few
// aliases can otherwise name each other into billions of nodes).
constexpr int kMaxDepth = 64;
// A kubelet config.yaml is a few KiB.
constexpr long kMaxYamlBytes = 4 << 20;
constexpr long kMaxNodes = 200000;

struct Failure {
  std::string why;
};

std::string at(const yaml_mark_t& m) {
  return "line " + std::to_string(m.line + 1) + ", column " + std::to_string(m.column + 1);
}

bool all_digits(const std::string& s, size_t from, int base) {
  if (from >= s.size()) return false;
  for (size_t i = from; i < s.size(); ++i) {
    char c = s[i];
    bool ok = base == 16 ? std::isxdigit(static_cast<unsigned char>(c)) != 0 : (c >= '0' && c < char('0' + base));
    if (!ok) return false;
  }
  return true;
}

// A plain scalar typed by YAML 1.2's core schema; anything else stays a string.
nlohmann::json plain_scalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  size_t sign = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  try {
    if (all_digits(s, sign, 10)) return s[0] == '-' ? nlohmann::json(std::stoll(s)) : nlohmann::json(std::stoull(s.substr(sign)));
    if (s.size() > 2 && s[0] == '0' && s[1] == 'x' && all_digits(s, 2, 16)) return std::stoull(s.substr(2), nullptr, 16);
    if (s.size() > 2 && s[0] == '0' && s[1] == 'o' && all_digits(s, 2, 8)) return std::stoull(s.substr(2), nullptr, 8);
  } catch (const std::out_of_range&) {
    return s;  // beyond 64 bits: kept as written
  }
  // Floats: digits with a point or an exponent (strtod would also take "inf", "0x1p3", "nan").
  bool digit = false, other = false;
  for (size_t i = sign; i < s.size(); ++i) {
    char c = s[i];
    if (c >= '0' && c <= '9') digit = true;
    else if (c != '.' && c != 'e' && c != 'E' && c != '-' && c != '+') other = true;
  }
  if (digit && !other) {
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (end && *end == '\0') return d;
  }
  return s;
}

struct Converter {
  yaml_document_t* doc;
  long nodes = 0;

  nlohmann::json convert(yaml_node_t* n, int depth) {
    if (!n) return nullptr;
    if (depth > kMaxDepth) throw Failure{at(n->start_mark) + ": nested deeper than " + std::to_string(kMaxDepth) + " levels"};
    if (++nodes > kMaxNodes)
      throw Failure{at(n->start_mark) + ": more than " + std::to_string(kMaxNodes) + " nodes once aliases are expanded"};
    switch (n->type) {
      case YAML_SCALAR_NODE: {
        std::string v(reinterpret_cast<const char*>(n->data.scalar.value), n->data.scalar.length);
        return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? plain_scalar(v) : nlohmann::json(v);
      }
      case YAML_SEQUENCE_NODE: {
        nlohmann::json a = nlohmann::json::array();
        for (yaml_node_item_t* i = n->data.sequence.items.start; i < n->data.sequence.items.top; ++i)
          a.push_back(convert(yaml_document_get_node(doc, *i), depth + 1));
        return a;
      }
      case YAML_MAPPING_NODE: {
        nlohmann::json o = nlohmann::json::object();
        for (yaml_node_pair_t* p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; ++p) {
          yaml_node_t* k = yaml_document_get_node(doc, p->key);
          if (!k || k->type != YAML_SCALAR_NODE) throw Failure{at(n->start_mark) + ": a key that is not a scalar"};
          std::string key(reinterpret_cast<const char*>(k->data.scalar.value), k->data.scalar.length);
          if (o.contains(key)) throw Failure{at(k->start_mark) + ": the key \"" + key + "\" appears twice"};
          o[key] = convert(yaml_document_get_node(doc, p->value), depth + 1);
        }
        return o;
      }
      default:
        return nullptr;
    }
  }
};

using gpubind::module_side::copy_error;

std::string parser_error(const yaml_parser_t& p) {
  std::string where = at(p.problem_mark);
  return where + ": " + (p.problem ? p.problem : "not YAML") + (p.context ? std::string(" (") + p.context + ")" : "");
}

// The deepest nesting of flow collections ([ and {), counted over every byte, quoted or not:
// libyaml's scanner spends time in proportion to the open flow levels on every token (200 KB of
// "[[[[..." took it 20-50 s), so text nested past kMaxDepth is refused before libyaml sees it.
// Brackets inside quoted scalars count too: refusing a config with 64 unclosed brackets in one
// string is the price of not parsing YAML twice.
int flow_depth(const char* text, long len) {
  int depth = 0, deepest = 0;
  for (long i = 0; i < len; ++i) {
    if (text[i] == '[' || text[i] == '{') deepest = std::max(deepest, ++depth);
    else if ((text[i] == ']' || text[i] == '}') && depth > 0) --depth;
  }
  return deepest;
}

char* to_json(const char* text, long len, char* err, long errcap) {
  if (len > kMaxYamlBytes) {
    copy_error(err, errcap, "larger than " + std::to_string(kMaxYamlBytes) + " bytes");
    return nullptr;
  }
  if (flow_depth(text, len) > kMaxDepth) {
    copy_error(err, errcap, "nested deeper than " + std::to_string(kMaxDepth) + " levels");
    return nullptr;
  }
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) {
    copy_error(err, errcap, "cannot start libyaml's parser (out of memory)");
    return nullptr;
  }
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text), size_t(len));
  yaml_document_t doc;
  char* out = nullptr;
  if (!yaml_parser_load(&parser, &doc)) {
    copy_error(err, errcap, parser_error(parser));
    yaml_parser_delete(&parser);
    return nullptr;
  }
  try {
    Converter c{&doc};
    std::string json = c.convert(yaml_document_get_root_node(&doc), 0).dump();
    yaml_document_t next;
    if (!yaml_parser_load(&parser, &next)) throw Failure{parser_error(parser)};
    bool more = yaml_document_get_root_node(&next) != nullptr;
    yaml_document_delete(&next);
    if (more) throw Failure{"holds more than one YAML document"};
    out = gpubind::module_side::allocated_copy(json);
    if (!out) throw Failure{"out of memory"};
  } catch (const Failure& f) {
    copy_error(err, errcap, f.why);
  } catch (const std::exception& e) {
    copy_error(err, errcap, e.what());
  }
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  return out;
}

const GpubindYamlApi kApi{1, to_json, gpubind::module_side::release_copy};

}  // namespace

extern "C" const GpubindYamlApi* gpubind_yaml_api_v1() { return &kApi; }
